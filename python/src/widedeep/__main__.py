"""python -m widedeep convert DATA.parquet --label y --dense I1,I2 --cat C1,C2 -o train.wdr

wd convert's CSV options for Parquet (read batch by batch with pyarrow) or
Arrow IPC files; the columns map as wd convert --format csv maps a CSV
file's, so both give the same .wdr for the same rows."""
import argparse
import signal
import sys

import widedeep


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m widedeep")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert", help="Parquet or Arrow IPC -> .wdr records")
    c.add_argument("input", help="a .parquet file (or .arrow/.feather/.ipc)")
    c.add_argument("-o", "--output", required=True, metavar="OUT.wdr")
    c.add_argument("--label", required=True, metavar="COL")
    c.add_argument("--dense", metavar="COLS")
    c.add_argument("--cat", metavar="COLS")
    c.add_argument("--id-column", metavar="COL")
    c.add_argument("--derive", metavar="NAME=COL[a:b],...")
    c.add_argument("--dense-raw", action="store_true")
    c.add_argument("--delimiter", default=",", metavar="C", help="the stored header's separator (default ',')")
    c.add_argument("--buckets", type=int, default=0, metavar="N")
    c.add_argument("--slot-buckets", metavar="A=N,...")
    c.add_argument("--min-count", type=int, default=0, metavar="K")
    c.add_argument("--schema-from", metavar="F.wdr")
    c.add_argument("--extend-vocab", action="store_true")
    c.add_argument("--vocab-capacity", type=int, default=0, metavar="N")
    c.add_argument("--bad-lines", choices=["error", "skip"], default="error")
    c.add_argument("--threads", type=int, default=1, metavar="T")
    c.add_argument("--block", type=int, default=0, metavar="M")
    c.add_argument("--level", type=int, default=0, metavar="L")
    a = ap.parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        r = widedeep.convert(a.input, a.output, a.label, dense=a.dense, cat=a.cat, id=a.id_column, derive=a.derive,
                             buckets=a.buckets, slot_buckets=a.slot_buckets, delimiter=a.delimiter,
                             dense_raw=a.dense_raw,
                             schema_from=a.schema_from, min_count=a.min_count, vocab_capacity=a.vocab_capacity,
                             extend_vocab=a.extend_vocab, threads=a.threads, block=a.block, level=a.level,
                             bad_lines=a.bad_lines)
    except widedeep.Error as e:
        print("python -m widedeep: %s" % e.args[0], file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("python -m widedeep: interrupted: the conversion stopped; %s was not written" % a.output, file=sys.stderr)
        return 130
    print("converted rows=%d bad_rows=%d blocks=%d seconds=%.3f rows/s=%.0f bytes_out=%d" %
          (r["rows"], r["bad_rows"], r["blocks"], r["seconds"], r["rows"] / r["seconds"] if r["seconds"] else 0,
           r["bytes_out"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
