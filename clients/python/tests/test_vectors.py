"""The shared vectors (tests/vectors/credit_split.json, cluster_plan.json), run against this
client's own credit ledger, cluster plan and frame parsing; the C++ SDK and the TypeScript
client run the same files."""

from __future__ import annotations

import json
import os
import unittest
from typing import Any, Dict, List, Optional

import support  # noqa: F401  (sets the path)

from outboxd import protocol
from outboxd.cluster import KnownNode, NodeInfo, parse_nodes, plan_cluster
from outboxd.credit_ledger import CREDIT_SETTLE, CreditFrame, CreditLedger

VECTORS = os.path.join(os.path.dirname(support.CLIENT_DIR), os.pardir, "tests", "vectors")


def load(name: str) -> Dict[str, Any]:
    with open(os.path.join(VECTORS, name), encoding="utf-8") as f:
        return json.load(f)


def listed_nodes(frame: Dict[str, Any]) -> List[NodeInfo]:
    """The nodes a welcome or cluster frame lists, read as the worker reads them."""
    (message,) = protocol.node_messages(json.dumps(frame))
    return parse_nodes(message.get("cluster" if message["type"] == "welcome" else "nodes"))


class Link:
    """A node the worker knows, as the vectors' worker keeps it."""

    def __init__(self, url: str, seed: bool, node_id: Optional[str] = None) -> None:
        self.url = url
        self.seed = seed
        self.node_id = node_id
        self.connected = False


class ScenarioRun:
    """Drives one scenario through a CreditLedger and checks every step."""

    def __init__(self, test: unittest.TestCase, scenario: Dict[str, Any], settle_ms: int) -> None:
        self.test = test
        self.window = scenario["window"]
        # In milliseconds, as the vectors count (the ledger takes any unit, used throughout).
        self.ledger = CreditLedger(self.window, scenario["rebalance_interval_ms"],
                                   settle=settle_ms)
        self.urls: Dict[str, str] = scenario.get("urls", {})
        self.links: Dict[str, Link] = {name: Link(self.urls.get(name, name), True)
                                       for name in scenario.get("seeds", [])}
        self.credit: Dict[str, int] = {}  # every connection the worker holds, by node
        self.in_flight: Dict[str, int] = {}
        self.now = 0.0

    def step(self, step: Dict[str, Any]) -> None:
        self.now = step.get("at_ms", self.now)
        sends: List[CreditFrame] = []
        if "open" in step:
            name = step["open"]
            link = self.links.setdefault(name, Link(self.urls.get(name, name), False))
            link.connected, link.node_id = True, name
            self.credit[name], self.in_flight[name] = 0, 0
            sends = self.ledger.open(name, self.now)
        elif "close" in step:
            name = step["close"]
            self.links[name].connected = False
            del self.credit[name], self.in_flight[name]
            sends = self.ledger.close(name, self.now)
        elif "drain" in step:
            self.credit[step["drain"]] = 0
            sends = self.ledger.drain(step["drain"], self.now)
        elif "receive" in step:
            for name, count in step["receive"].items():
                for _ in range(count):
                    self.in_flight[name] += 1
                    self.ledger.received(name, self.now)
        elif "answer" in step:
            for name, count in step["answer"].items():
                for _ in range(count):
                    self.in_flight[name] -= 1
                    sends += self.ledger.answered(name, self.now)
        elif "tick" in step:
            sends = self.ledger.tick(self.now)
        elif "settle" in step:
            sends = self.ledger.settle(self.now)
        elif "cluster" in step:
            sends = self.cluster(step)
        else:
            self.test.fail(f"a step that does nothing: {step}")
        self.check(step, sends)

    def cluster(self, step: Dict[str, Any]) -> List[CreditFrame]:
        known = [KnownNode(link.url, link.node_id, link.seed, link.connected)
                 for link in self.links.values()]
        plan = plan_cluster(known, listed_nodes(step["cluster"]))
        by_url = {link.url: name for name, link in self.links.items()}
        self.test.assertEqual([info.node_id for info in plan.connect], step["connect"])
        self.test.assertEqual([by_url[url] for url in plan.drop], step["drop"])
        sends: List[CreditFrame] = []
        for url in plan.drop:
            name = by_url[url]
            del self.links[name]
            if name in self.credit:
                del self.credit[name], self.in_flight[name]
                sends += self.ledger.close(name, self.now)
        for info in plan.connect:
            self.links[info.node_id] = Link(info.url, False, info.node_id)
        return sends

    def check(self, step: Dict[str, Any], sends: List[CreditFrame]) -> None:
        expected = [(s["to"], "hello" in s, s["hello"] if "hello" in s else s["credit"])
                    for s in step["sends"]]
        self.test.assertEqual([(f.connection, f.hello, f.credit) for f in sends], expected)
        for frame in sends:
            self.credit[frame.connection] = frame.credit
        for name, credit in self.credit.items():
            self.test.assertEqual(self.ledger.credit(name), credit, f"credit of {name}")
        taken = [max(self.credit[name], self.in_flight[name]) for name in self.credit]
        holding = sum(1 for t in taken if t > 0)
        self.test.assertLessEqual(sum(taken), max(self.window, holding),
                                  f"credit and tasks {dict(zip(self.credit, taken))}")


class CreditVectorsTest(unittest.TestCase):
    def test_credit_split_vectors(self) -> None:
        vectors = load("credit_split.json")
        self.assertEqual(CREDIT_SETTLE * 1000, vectors["settle_ms"])
        self.assertGreater(len(vectors["scenarios"]), 0)
        for scenario in vectors["scenarios"]:
            run = ScenarioRun(self, scenario, vectors["settle_ms"])
            for index, step in enumerate(scenario["steps"]):
                with self.subTest(scenario=scenario["name"], step=index):
                    run.step(step)

    def test_cluster_plan_vectors(self) -> None:
        vectors = load("cluster_plan.json")
        self.assertGreater(len(vectors["cases"]), 0)
        for case in vectors["cases"]:
            with self.subTest(case=case["name"]):
                known = [KnownNode(k["url"], k.get("node_id"), k["seed"], k["connected"])
                         for k in case["known"]]
                plan = plan_cluster(known, listed_nodes(case["frame"]))
                self.assertEqual([{"node_id": i.node_id, "url": i.url} for i in plan.connect],
                                 case["connect"])
                self.assertEqual(plan.drop, case["drop"])


if __name__ == "__main__":
    unittest.main()
