"""Arrow stream input against text and .wdr (bench/RESULTS.md, issue 33).

  python3 bench/arrow_bench.py WD BUILD_PYTHON_DIR WORKDIR [ROWS]

Criteo-shaped rows from `wd gen --tsv`, written to Parquet with pyarrow
(64k-row groups) and to zstd TSV (zstd -3). Measures, on one machine:
  floor     pyarrow's own Parquet -> Arrow (iter_batches, every batch read)
  stream    widedeep.convert of the Parquet file (read batch by batch)
  text      wd convert --format csv of the zstd TSV (the same column mapping)
both sizing the tables from the data (two passes over the input); the two
.wdr files are checked equal byte for byte. Then one epoch of training from
the .wdr (no_shuffle) and from the Parquet stream (the same batches; the
models are checked equal bit for bit)."""
import filecmp
import os
import resource
import subprocess
import sys
import time

WD, PYDIR, W = sys.argv[1:4]
ROWS = int(sys.argv[4]) if len(sys.argv) > 4 else 200000
sys.path.insert(0, PYDIR)
import pyarrow as pa  # noqa: E402
import pyarrow.csv as pacsv  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import widedeep  # noqa: E402

os.makedirs(W, exist_ok=True)
COLS = ["label"] + ["I%d" % i for i in range(1, 14)] + ["C%d" % i for i in range(1, 27)]
DENSE, CATS = ",".join(COLS[1:14]), ",".join(COLS[14:])
tsv, gen, zst, parquet = (os.path.join(W, n) for n in ("rows.tsv", "gen.wdr", "rows.tsv.zst", "rows.parquet"))
subprocess.run([WD, "gen", "-o", gen, "--rows", str(ROWS), "--tsv", tsv, "--seed", "5"], check=True,
               stdout=subprocess.DEVNULL)
subprocess.run(["zstd", "-q", "-f", "-3", tsv, "-o", zst], check=True)
types = dict([("label", pa.int8())] + [(c, pa.int64()) for c in COLS[1:14]] + [(c, pa.string()) for c in COLS[14:]])
t = pacsv.read_csv(tsv, read_options=pacsv.ReadOptions(column_names=COLS),
                   parse_options=pacsv.ParseOptions(delimiter="\t"),
                   convert_options=pacsv.ConvertOptions(column_types=types))
pq.write_table(t, parquet, row_group_size=65536)
del t


def cpu():   # this process's CPU seconds (every thread) and its finished children's
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def best(fn, n=3):
    """The least wall time and the least CPU time of n runs (the box is shared: CPU time is the steadier)."""
    walls, cpus = [], []
    for _ in range(n):
        t0, c0 = time.perf_counter(), cpu()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu() - c0)
    return min(walls), min(cpus)


def floor():
    f = pq.ParquetFile(parquet)
    rows = sum(b.num_rows for b in f.iter_batches(batch_size=65536))
    assert rows == ROWS


a_wdr, b_wdr = os.path.join(W, "stream.wdr"), os.path.join(W, "text.wdr")
s_floor = best(floor)
s_stream = best(lambda: widedeep.convert(parquet, a_wdr, "label", dense=DENSE, cat=CATS, delimiter="\t"))
s_text = best(lambda: subprocess.run([WD, "convert", "--format", "csv", "--delimiter", "tab", "--columns",
                                      ",".join(COLS), "--label",
                                      "label", "--dense", DENSE, "--cat", CATS, "-o", b_wdr, zst], check=True,
                                     stdout=subprocess.DEVNULL))
assert filecmp.cmp(a_wdr, b_wdr, shallow=False), "the .wdr files differ"
mb = {n: os.path.getsize(p) / 1e6 for n, p in (("parquet", parquet), ("zst", zst), ("tsv", tsv))}
print("rows %d; parquet %.1f MB, tsv.zst %.1f MB (tsv %.1f MB); cpu: %s" % (ROWS, mb["parquet"], mb["zst"],
                                                                            mb["tsv"], os.cpu_count()))
for name, (w, c) in (("pyarrow Parquet -> Arrow (floor)", s_floor), ("convert: Parquet stream -> .wdr", s_stream),
                     ("convert: wd convert zstd TSV -> .wdr", s_text)):
    print("%-40s wall %7.3f s %9.0f rows/s   cpu %7.3f s %9.0f rows/cpu-s" % (name, w, ROWS / w, c, ROWS / c))

kw = dict(embed_dim=16, hidden=[64, 32], seed=1)   # a small MLP: the input path shows
ma, mb_ = widedeep.Model.create(b_wdr, **kw), widedeep.Model.create(b_wdr, **kw)
t0, c0 = time.perf_counter(), cpu()
ra = ma.train(b_wdr, batch_size=4096, no_shuffle=True, threads=2)
ta, ca = time.perf_counter() - t0, cpu() - c0
t0, c0 = time.perf_counter(), cpu()
rb = mb_.train(parquet, batch_size=4096, threads=2)
tb, cb = time.perf_counter() - t0, cpu() - c0
assert ma.state() == mb_.state(), "the models differ"
print("train: .wdr (no_shuffle)                 wall %7.3f s %9.0f samples/s   cpu %7.3f s  %s" %
      (ta, ROWS / ta, ca, ra["engine"]))
print("train: Parquet stream                    wall %7.3f s %9.0f samples/s   cpu %7.3f s  models equal bit for bit" %
      (tb, ROWS / tb, cb))
print("data wait share: .wdr %.3f, stream %.3f" % (ra["stage_data"], rb["stage_data"]))
