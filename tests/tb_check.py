"""tests/tb_check.py LOG.jsonl TBDIR: TensorBoard's own reader
(event_accumulator) reads the event file `wd train --tensorboard TBDIR` wrote,
and every scalar of `--log LOG.jsonl` (each key but kind, step and epoch; null
values are not written) is there at its step with its value (to float32's
precision: TensorBoard keeps float32), with no scalar more or less; and each
epoch's epoch/loss, in both, is the mean of that epoch's step losses. Prints one
line; exit 0 when all hold, 1 (with the reason) otherwise."""
import json
import math
import sys

from tensorboard.backend.event_processing import event_accumulator

import checklib   # tests/checklib.py, beside this file


def main():
    log, tbdir = sys.argv[1], sys.argv[2]
    want = {}   # tag -> {step: value}
    rows = kinds = 0
    seen_kinds = set()
    for line in open(log):
        row = json.loads(line)
        rows += 1
        seen_kinds.add(row["kind"])
        for k, v in row.items():
            if k in ("kind", "step", "epoch") or v is None:
                continue
            if row["step"] in want.setdefault(k, {}):
                return f"{log}: tag {k} twice at step {row['step']}"
            want[k][row["step"]] = v
    acc = event_accumulator.EventAccumulator(tbdir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    tags = sorted(acc.Tags()["scalars"])
    if tags != sorted(want):
        return f"TensorBoard's tags {tags} != the log's {sorted(want)}"
    # each epoch's loss, in the log and in TensorBoard, is the mean of the
    # step losses of that epoch alone (computed here from the step rows)
    steps, epochs = [], []
    for line in open(log):
        row = json.loads(line)
        if row["kind"] == "step":
            steps.append((row["step"], row["train/loss"]))
        elif row["kind"] == "epoch":
            epochs.append(row["step"])
    tb_epoch = {e.step: e.value for e in acc.Scalars("epoch/loss")} if "epoch/loss" in tags else {}
    prev = -1
    for end in epochs:
        losses = [v for s, v in steps if prev < s <= end]
        mean = sum(losses) / len(losses)
        for who, got in (("the log", want.get("epoch/loss", {}).get(end)), ("TensorBoard", tb_epoch.get(end))):
            if got is None or not math.isclose(got, mean, rel_tol=1e-6):
                return f"epoch/loss at step {end} in {who}: {got!r}, the mean of its {len(losses)} steps' train/loss {mean!r}"
        prev = end
    n = 0
    for tag in tags:
        got = {e.step: e.value for e in acc.Scalars(tag)}
        if sorted(got) != sorted(want[tag]):
            return f"{tag}: TensorBoard has steps {sorted(got)[:5]}..., the log {sorted(want[tag])[:5]}..."
        for step, v in want[tag].items():
            if not math.isclose(got[step], v, rel_tol=1e-6, abs_tol=1e-30):
                return f"{tag} at step {step}: TensorBoard {got[step]!r}, the log {v!r}"
            n += 1
    print(f"ok: {n} scalars under {len(tags)} tags read back by TensorBoard's event_accumulator, equal to the log's "
          f"{rows} rows ({', '.join(sorted(seen_kinds))})")
    return None


if __name__ == "__main__":
    checklib.run(main)
