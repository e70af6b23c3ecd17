from __future__ import annotations

from datetime import UTC, datetime

from worker.llm.records import CallStatus, LLMCall, RecordedMessage, UsageSummary, record_messages


def test_wire_messages_become_typed_records() -> None:
    raw = [
        {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
        "not even a message",
    ]
    messages, truncated = record_messages(raw)
    assert not truncated
    assert messages[0].content == "look\n[image_url]"
    assert messages[1].tool_calls[0].name == "bash"
    assert messages[2].tool_call_id == "c1"
    assert messages[3].role == "unknown"


def test_long_texts_keep_head_and_tail() -> None:
    text = "HEAD" + "x" * 50_000 + "TAIL"
    (message,), truncated = record_messages([{"role": "tool", "content": text}], max_chars=4000)
    assert truncated
    assert message.content is not None
    assert message.content.startswith("HEAD") and message.content.endswith("TAIL")
    assert len(message.content) < 1100
    assert "characters cut" in message.content


def test_old_messages_are_dropped_with_a_note_when_the_cap_is_hit() -> None:
    raw = [{"role": "system", "content": "sys"}] + [
        {"role": "user", "content": f"{i}" * 900} for i in range(10)
    ]
    messages, truncated = record_messages(raw, max_chars=4000)
    assert truncated
    assert messages[0].content == "sys"
    assert messages[1].role == "clade" and "omitted" in (messages[1].content or "")
    assert messages[-1].content == "9" * 900
    assert sum(m.size() for m in messages if m.role != "clade") <= 4000


def test_records_round_trip_as_json_and_sum_up() -> None:
    def call(status: CallStatus, p: int, c: int, cost: float, known: bool = True) -> LLMCall:
        return LLMCall(
            id=f"llm-{p}",
            seq=p,
            purpose="solve",
            model="m" if known else "local",
            prompt_tokens=p,
            completion_tokens=c,
            cost_usd=cost,
            price_known=known,
            started_at=datetime(2025, 1, 1, tzinfo=UTC),
            duration_s=0.1,
            status=status,
            request_messages=[RecordedMessage(role="user", content="hi")],
        )

    calls = [call("ok", 10, 5, 0.5), call("ok", 20, 1, 0.0, known=False), call("error", 0, 0, 0)]
    assert LLMCall.model_validate_json(calls[0].model_dump_json()) == calls[0]
    summary = UsageSummary.of(calls)
    assert (summary.calls, summary.ok_calls, summary.error_calls) == (3, 2, 1)
    assert (summary.prompt_tokens, summary.completion_tokens, summary.total_tokens) == (30, 6, 36)
    assert summary.cost_usd == 0.5
    assert summary.unpriced_models == ["local"]
    assert summary.schema_version == 1
