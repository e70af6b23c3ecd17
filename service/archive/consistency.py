"""The start-up check: every agent is in git and in the database, or it is reported."""

from __future__ import annotations

from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.archive.git_store import GitStore
from service.db.models import Agent


class ConsistencyReport(BaseModel):
    agents_checked: int = 0
    refs_restored: list[str] = Field(default_factory=list)
    refs_removed: list[str] = Field(default_factory=list)
    missing_commits: list[str] = Field(default_factory=list)

    @property
    def consistent(self) -> bool:
        return not self.missing_commits


def check(git: GitStore, sessions: sessionmaker[Session], *, repair: bool = True) -> ConsistencyReport:
    """Compare agent rows with agent refs.

    - a row whose commit exists but whose ref is missing (crash after the
      transaction): the ref is restored;
    - a ref with no row (written by hand, or by an older crash): the ref is
      removed, since the agent was never recorded;
    - a row whose commit is missing (the repository was damaged): reported.
    """
    with sessions() as session:
        rows = set(session.scalars(select(Agent.id)))
    refs = git.agent_refs()
    report = ConsistencyReport(agents_checked=len(rows))
    for sha in sorted(rows - refs):
        if git.has_commit(sha):
            report.refs_restored.append(sha)
            if repair:
                git.set_agent_ref(sha)
        else:
            report.missing_commits.append(sha)
    for sha in sorted(refs - rows):
        report.refs_removed.append(sha)
        if repair:
            git.delete_agent_ref(sha)
    return report
