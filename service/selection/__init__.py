"""Parent selection: strategies behind one protocol, chosen per run by name.

A strategy draws parents (`base`) and keeps its bookkeeping through the policy hooks the
driver's tick calls (`policy`), reading and writing its run through a ledger (`ledger`);
`registry` maps the names a run config uses to classes.
"""

from service.selection.base import Candidate, SelectionStrategy, StepContext, StrategyBase
from service.selection.group import GroupEvolution
from service.selection.hgm import Hgm
from service.selection.hgm_paper import HgmPaper
from service.selection.islands import Islands, Migration
from service.selection.ledger import EvaluationView, MemberView, RunLedger, StepView
from service.selection.map_elites import MapElites
from service.selection.policy import (
    EXPAND,
    Expand,
    ImproveParts,
    Measure,
    Move,
    PolicyChain,
    PolicyDefaults,
    RunScope,
    SearchPolicy,
    Wait,
)
from service.selection.registry import (
    STRATEGIES,
    UnknownStrategyError,
    known_strategies,
    make_strategy,
    register_strategy,
    unregister_strategy,
)
from service.selection.score import Best, ScoreChildProp, ScoreProp, Uniform

__all__ = [
    "EXPAND",
    "STRATEGIES",
    "Best",
    "Candidate",
    "EvaluationView",
    "Expand",
    "GroupEvolution",
    "Hgm",
    "HgmPaper",
    "ImproveParts",
    "Islands",
    "MapElites",
    "Measure",
    "MemberView",
    "Migration",
    "Move",
    "PolicyChain",
    "PolicyDefaults",
    "RunLedger",
    "RunScope",
    "ScoreChildProp",
    "ScoreProp",
    "SearchPolicy",
    "SelectionStrategy",
    "StepContext",
    "StepView",
    "StrategyBase",
    "Uniform",
    "UnknownStrategyError",
    "Wait",
    "known_strategies",
    "make_strategy",
    "register_strategy",
    "unregister_strategy",
]
