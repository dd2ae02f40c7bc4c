"""Issue 15's resume check at full size: 20 SIGKILLs at random points of a cached run at
concurrency 2, each resumed and compared with an uninterrupted run: the store (latencies
left out), ``final.jsonl`` and every report table must be byte-identical.

Uses ``tests/test_resume.py``'s slow deterministic HTTP model. Prints one line per trial
(outcomes stored at the kill, whether each part matched) and the totals; exit status 1 when
any trial differs. Usage: ``python benchmarks/resume_trials.py [--trials 20] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import test_resume as tr  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), tr.SlowModelHandler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    rng = random.Random(args.seed)
    total = tr.N_CASES * len(tr.MODES)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="callscope-resume-") as tmp_name:
        tmp = Path(tmp_name)
        cases = tmp / "cases.jsonl"
        tr.write_cases(cases)
        ref = tr.reference_run(tmp / "ref", url, cases)
        ref_store, ref_final = tr.store_dump(ref), (ref / "final.jsonl").read_bytes()
        ref_tables = tr.report_tables(ref)
        for trial in range(args.trials):
            partial, out = tr.resumed_trial(tmp / f"t{trial}", url, cases, rng.randrange(1, total))
            same = (
                tr.store_dump(out) == ref_store,
                (out / "final.jsonl").read_bytes() == ref_final,
                tr.report_tables(out) == ref_tables,
            )
            failed += not all(same)
            print(f"trial {trial:2d}: killed at {partial:2d}/{total} outcomes; store, final.jsonl,"
                  f" tables identical: {same}", flush=True)  # fmt: skip
    httpd.shutdown()
    print(f"{args.trials - failed}/{args.trials} trials byte-identical ({len(ref_tables)} tables)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
