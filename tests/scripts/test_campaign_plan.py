"""scripts/campaign-plan: which runs of a campaign queue a GPU loan starts.

    /usr/bin/python3 tests/scripts/test_campaign_plan.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "campaign-plan")
FIXTURE = os.path.join(REPO, "tests", "fixtures", "campaign", "queue.toml")
OFFICIAL = os.path.join(REPO, "docs", "measured", "campaign", "queue.toml")

def run(*args):
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def planned(budget, *extra, queue=FIXTURE):
    code, out, err = run("--queue", queue, "--budget", str(budget), "--margin", "5", *extra)
    assert code == 0, err
    return [tuple(line.split()[:3]) for line in out.splitlines()]


class Planning(unittest.TestCase):
    def test_done_runs_are_not_started_and_what_fits_is_taken_in_order(self):
        self.assertEqual(planned(120), [("transformer", "listops", "1"), ("transformer", "text", "0"),
                                        ("transformer", "listops", "2")])

    def test_a_run_that_does_not_fit_is_not_started_but_a_later_shorter_one_may_be(self):
        # 10 s each (5 x 1.1 + 5): 25 s holds two; the 100000 s Pathfinder never fits.
        self.assertEqual(planned(25), [("transformer", "listops", "1"), ("transformer", "text", "0")])
        self.assertEqual(planned(9), [])
        code, out, _ = run("--queue", FIXTURE, "--budget", "1000000", "--margin", "5", "--json")
        states = {r["name"]: r["state"] for r in json.loads(out)["runs"]}
        self.assertEqual(states["transformer/listops/seed-0"], "done")
        self.assertEqual(states["transformer/pathfinder/seed-0"], "planned")
        _, out, _ = run("--queue", FIXTURE, "--budget", "100", "--margin", "5", "--json")
        self.assertEqual({r["name"]: r["state"] for r in json.loads(out)["runs"]}["transformer/pathfinder/seed-0"],
                         "does not fit")

    def test_runs_tried_in_this_loan_are_skipped(self):
        self.assertEqual(planned(120, "--skip", "transformer/listops/seed-1", "transformer/text/seed-0"),
                         [("transformer", "listops", "2")])

    def test_this_loans_prediction_replaces_the_estimate(self):
        with tempfile.TemporaryDirectory() as d:
            bench = os.path.join(d, "bench.json")
            with open(bench, "w") as f:
                json.dump({"runs": [{"plugin": "transformer", "task": "pathfinder", "predicted_s": {"one_run": 50}}]}, f)
            code, out, err = run("--queue", FIXTURE, "--budget", "200", "--margin", "5", "--predicted", bench)
            self.assertEqual(code, 0, err)
            self.assertIn("transformer pathfinder 0 60 predicted", out)

    def test_the_official_queue_reads_and_its_first_listops_run_is_done(self):
        code, out, err = run("--queue", OFFICIAL, "--budget", "0", "--json")
        self.assertEqual(code, 0, err)
        runs = json.loads(out)["runs"]
        self.assertEqual(runs[0]["name"], "transformer/listops/seed-0")
        self.assertEqual(runs[0]["state"], "done")
        self.assertTrue(all(r["plugin"] == "transformer" for r in runs))
        self.assertEqual(sorted({r["task"] for r in runs}), ["image", "listops", "pathfinder", "retrieval", "text"])
        self.assertTrue(all(sum(1 for r in runs if r["task"] == t) == 3 for t in {r["task"] for r in runs}))


class BadQueues(unittest.TestCase):
    def bad(self, text, expected):
        with tempfile.TemporaryDirectory() as d:
            q = os.path.join(d, "queue.toml")
            with open(q, "w") as f:
                f.write(text)
            code, out, err = run("--queue", q, "--budget", "100")
            self.assertEqual(code, 2, err)
            self.assertEqual(out, "")
            self.assertIn(q, err)
            self.assertIn(expected, err)

    HEAD = 'schema = "lrahost.campaign/v1"\nresults = "results"\n'
    RUN = '[[run]]\nplugin = "transformer"\ntask = "listops"\nseed = 1\nestimate_s = 5\n'

    def test_each_malformed_field_is_named(self):
        self.bad('schema = "other"\n', "schema is 'other'")
        self.bad('schema = "lrahost.campaign/v1"\n' + self.RUN, "results must name")
        self.bad(self.HEAD, "no [[run]] entries")
        self.bad(self.HEAD + self.RUN.replace("seed = 1", 'seed = "1"'), "run 1: seed is '1'")
        self.bad(self.HEAD + self.RUN.replace("seed = 1", "seed = -3"), "seed is -3")
        self.bad(self.HEAD + self.RUN.replace("estimate_s = 5", "estimate_s = 0"), "estimate_s is 0")
        self.bad(self.HEAD + self.RUN.replace("estimate_s = 5", "estimate_s = nan"), "estimate_s is nan")
        self.bad(self.HEAD + self.RUN.replace('task = "listops"', 'task = "../x"'), "plain names")
        self.bad(self.HEAD + self.RUN + "preset = 'smoke'\n", "unknown field(s) preset")
        self.bad(self.HEAD + self.RUN + self.RUN, "run 2: transformer/listops/seed-1 is listed twice")
        self.bad("schema = [\n", "not TOML")

    def test_a_missing_queue_and_a_negative_budget_are_refused(self):
        code, _, err = run("--queue", "/nonexistent/queue.toml", "--budget", "10")
        self.assertEqual(code, 2)
        self.assertIn("/nonexistent/queue.toml: cannot read", err)
        code, _, err = run("--queue", FIXTURE, "--budget", "-1")
        self.assertEqual(code, 2)


if __name__ == "__main__":
    unittest.main()
