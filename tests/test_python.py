"""The Python package (python/) over real Arrow producers: the Criteo and
Avazu samples written to Parquet with pyarrow, read back through pyarrow,
DuckDB and Polars; each stream converts to the .wdr that `wd convert` makes
of the same rows as text (wd inspect --verify and wd dump equal, and the
files byte for byte), training from the stream gives the model of training
from that .wdr bit for bit, and the refusals raise widedeep.Error with the
library's message.
Usage: python3 tests/test_python.py WD BUILD_PYTHON_DIR TMPDIR DATADIR
One PASS/FAIL/SKIP line per test, then "# python: N passed, N failed, N skipped"."""
import filecmp
import os
import re
import shutil
import subprocess
import sys
import traceback

WD, PYDIR, T, DATA = sys.argv[1:5]
sys.path.insert(0, PYDIR)
os.makedirs(T, exist_ok=True)
results = {"PASS": 0, "FAIL": 0, "SKIP": 0}


def say(kind, name, why):
    results[kind] += 1
    print("%s %s: %s" % (kind, name, why), flush=True)


missing = []
for mod in ("numpy", "pyarrow", "duckdb", "polars"):
    try:
        __import__(mod)
    except Exception as e:   # not installed, or broken
        missing.append("%s (%s)" % (mod, type(e).__name__))
try:
    import widedeep
except Exception as e:
    widedeep = None
    missing.append("widedeep from %s (%s: %s)" % (PYDIR, type(e).__name__, e))
CRITEO = os.path.join(DATA, "criteo_kaggle_head8000_train.tsv")
AVAZU = os.path.join(DATA, "avazu_kaggle_head9000_train.csv")
TESTS = ["py_criteo_pyarrow", "py_criteo_polars", "py_avazu_duckdb", "py_train_from_stream", "py_predict_evaluate",
         "py_refusals",
         "py_lists", "py_interrupt"]
if missing or not os.path.exists(CRITEO) or not os.path.exists(AVAZU):
    why = ("missing: " + ", ".join(missing) + " (make deps installs pyarrow, duckdb, polars)") if missing else \
        "no Criteo/Avazu sample in " + DATA
    for t in TESTS:
        say("SKIP", t, why)
    print("# python: %d passed, %d failed, %d skipped" % (results["PASS"], results["FAIL"], results["SKIP"]))
    sys.exit(0)

import duckdb  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.csv as pacsv  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

CRITEO_COLS = ["label"] + ["I%d" % i for i in range(1, 14)] + ["C%d" % i for i in range(1, 27)]
DENSE = ",".join(CRITEO_COLS[1:14])
CATS = ",".join(CRITEO_COLS[14:])
AVAZU_COLS = ("id,click,hour,C1,banner_pos,site_id,site_domain,site_category,app_id,app_domain,app_category,"
              "device_id,device_ip,device_model,device_type,device_conn_type,"
              "C14,C15,C16,C17,C18,C19,C20,C21").split(",")
AVAZU_CATS = ",".join(AVAZU_COLS[3:])
AVAZU_DERIVE = "hour_of_day=hour[6:8],day_of_week=weekday(hour[0:6])"


def run(*args):
    p = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        raise AssertionError("%s: exit %d: %s" % (" ".join(args[:3]), p.returncode, p.stderr.strip()[-400:]))
    return p.stdout


def same_wdr(a, b):
    """wd inspect --verify and wd dump agree (but for the file name), and the files are equal byte for byte."""
    ia = re.sub(r"decoded at .*", "", run(WD, "inspect", "--verify", a).replace(a, "X"))   # all but the speed
    ib = re.sub(r"decoded at .*", "", run(WD, "inspect", "--verify", b).replace(b, "X"))
    if ia != ib:
        raise AssertionError("wd inspect --verify differs:\n%s\n%s" % (ia, ib))
    da, db = os.path.join(T, "dump-a"), os.path.join(T, "dump-b")
    for d in (da, db):
        shutil.rmtree(d, ignore_errors=True)
    run(WD, "dump", a, da)
    run(WD, "dump", b, db)
    cmp = filecmp.dircmp(da, db)
    bad = cmp.diff_files + cmp.left_only + cmp.right_only
    bad += [f for f in cmp.common_files if not filecmp.cmp(os.path.join(da, f), os.path.join(db, f), shallow=False)]
    if bad:
        raise AssertionError("wd dump differs in %s" % bad)
    if not filecmp.cmp(a, b, shallow=False):
        raise AssertionError("%s and %s differ byte for byte" % (a, b))
    return ia.count("\n")


def test(name):
    def wrap(fn):
        try:
            why = fn()
            say("PASS", name, why)
        except Exception as e:
            say("FAIL", name, "%s: %s" % (type(e).__name__, str(e)[-600:]))
            traceback.print_exc(file=sys.stdout)
        return fn
    return wrap


# the data: Parquet files written by pyarrow from the samples, and the same rows as text without a header
# line (given to wd convert by --columns: its blocks then hold --block rows, as a stream's)
crit = pacsv.read_csv(CRITEO, read_options=pacsv.ReadOptions(column_names=CRITEO_COLS),
                      parse_options=pacsv.ParseOptions(delimiter="\t"),
                      convert_options=pacsv.ConvertOptions(column_types=dict([("label", pa.int8())] +
                                                                           [(c,
                                                                             pa.int64()) for c in CRITEO_COLS[1:14]] +
                                                                           [(c,
                                                                             pa.string()) for c in CRITEO_COLS[14:]])))
CRIT_PQ = os.path.join(T, "criteo.parquet")
pq.write_table(crit, CRIT_PQ, row_group_size=1000)
ava_types = {c: pa.string() for c in AVAZU_COLS}
ava_types.update({c: pa.int64() for c in ("click", "hour", "C1", "banner_pos", "device_type", "device_conn_type",
                                          "C14", "C15",
                                         "C16", "C17", "C18", "C19", "C20", "C21")})
ava = pacsv.read_csv(AVAZU, convert_options=pacsv.ConvertOptions(column_types=ava_types))
AVA_PQ = os.path.join(T, "avazu.parquet")
pq.write_table(ava, AVA_PQ, row_group_size=3000)
AVA_TXT = os.path.join(T, "avazu-body.csv")
with open(AVAZU) as f, open(AVA_TXT, "w") as g:
    f.readline()
    shutil.copyfileobj(f, g)
CRIT_TEXT_WDR = os.path.join(T, "criteo-text.wdr")
run(WD, "convert", "--format", "csv", "--delimiter", "tab", "--columns", ",".join(CRITEO_COLS), "--label", "label",
    "--dense", DENSE,
    "--cat", CATS, "--block", "1000", "-o", CRIT_TEXT_WDR, CRITEO)


@test("py_criteo_pyarrow")
def _():
    out = os.path.join(T, "criteo-pq.wdr")   # python -m widedeep convert: Parquet through pyarrow, batch by batch
    p = subprocess.run([sys.executable, "-m", "widedeep", "convert", CRIT_PQ, "--label", "label", "--dense", DENSE,
                        "--cat", CATS,
                        "--delimiter", "tab", "--block", "1000", "-o", out],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, PYTHONPATH=PYDIR))
    if p.returncode or "converted rows=7200 " not in p.stdout:
        raise AssertionError("python -m widedeep convert: exit %d: %s %s" % (p.returncode, p.stdout, p.stderr[-400:]))
    lines = same_wdr(CRIT_TEXT_WDR, out)
    out2 = os.path.join(T, "criteo-table.wdr")   # a pyarrow Table, 2 threads
    widedeep.convert(crit, out2, "label", dense=DENSE.split(","), cat=CATS.split(","), delimiter="\t", block=1000,
                     threads=2)
    same_wdr(CRIT_TEXT_WDR, out2)
    return "7200 rows from Parquet (python -m widedeep) and from a Table: wd inspect --verify (%d lines), " \
           "wd dump and bytes equal to wd convert of the TSV" % lines


@test("py_criteo_polars")
def _():
    df = pl.read_parquet(CRIT_PQ)
    out = os.path.join(T, "criteo-polars.wdr")
    widedeep.convert(df, out, "label", dense=DENSE, cat=CATS, delimiter="\t", block=1000)
    same_wdr(CRIT_TEXT_WDR, out)
    fmts = sorted(set(str(t) for t in df.dtypes))
    return "a Polars DataFrame (%s) converts to the TSV's .wdr byte for byte" % ", ".join(fmts)


@test("py_avazu_duckdb")
def _():
    text = os.path.join(T, "avazu-text.wdr")
    run(WD, "convert", "--format", "csv", "--preset", "avazu", "--block", "2000", "-o", text, AVA_TXT)
    con = duckdb.connect()
    con.execute("SET threads TO 1")
    rel = con.sql("SELECT * FROM read_parquet('%s')" % AVA_PQ.replace("'", "''"))
    out = os.path.join(T, "avazu-duckdb.wdr")
    widedeep.convert(rel, out, "click", cat=AVAZU_CATS, derive=AVAZU_DERIVE,
                     block=2000)   # two passes: the query runs twice
    lines = same_wdr(text, out)
    return "8087 Avazu rows queried through DuckDB (derived hour and weekday slots, vocabularies sized from the " \
           "data): " \
           "equal to wd convert --preset avazu of the CSV (%d inspect lines)" % lines


@test("py_train_from_stream")
def _():
    kw = dict(embed_dim=8, hidden=[32, 16], seed=7)
    a = widedeep.Model.create(CRIT_TEXT_WDR, **kw)
    b = widedeep.Model.create(CRIT_TEXT_WDR, **kw)
    ra = a.train(CRIT_TEXT_WDR, batch_size=256, no_shuffle=True, threads=2)
    rb = b.train(CRIT_PQ, batch_size=256, threads=2)   # the Parquet file read as a stream, 256 rows a step
    if ra["steps"] != rb["steps"] or ra["steps"] != 29:
        raise AssertionError("steps %d from the file, %d from the stream" % (ra["steps"], rb["steps"]))
    if a.state() != b.state():
        raise AssertionError("the models differ")
    c = widedeep.Model.create(CRIT_TEXT_WDR, **kw)   # a Polars frame as the stream
    c.train(pl.read_parquet(CRIT_PQ), batch_size=256, threads=2)
    if a.state() != c.state():
        raise AssertionError("the model trained from Polars differs")
    # the loader budgets reach the stream's reader: 1000 bytes, then 1 byte under 2 batches, are refused; exactly 2
    # batches on 3 threads train the same model
    two = None
    for ram in (1000, None):
        try:
            widedeep.Model.create(CRIT_TEXT_WDR, **kw).train(CRIT_PQ, batch_size=256, loader_ram=ram or two - 1)
            raise AssertionError("loader_ram %d was not refused" % (ram or two - 1))
        except widedeep.Error as e:
            m = re.search(r"RAM budget (\d+) bytes \(ram_bytes\) is below the (\d+) needed for 2 batches", str(e))
            if not m or int(m.group(1)) != (ram or two - 1):
                raise AssertionError("not the budget's refusal: %s" % e)
            two = int(m.group(2))
    d = widedeep.Model.create(CRIT_TEXT_WDR, **kw)
    d.train(CRIT_PQ, batch_size=256, threads=2, loader_threads=3, loader_ram=two)
    if a.state() != d.state():
        raise AssertionError("the model trained on 3 read-ahead threads within 2 batches differs")
    return "29 steps of 256 from Parquet and from Polars, and on 3 read-ahead threads within %d bytes (%d and %d " \
           "refused): the model of the .wdr (no_shuffle), bit for bit (%d bytes of state)" % \
        (two, 1000, two - 1, len(a.state()))


@test("py_predict_evaluate")
def _():
    m = widedeep.Model.create(CRIT_TEXT_WDR, embed_dim=8, hidden=[32, 16], seed=3)
    m.train(CRIT_TEXT_WDR, batch_size=512, threads=2)
    path = os.path.join(T, "m.wdm")
    m.save(path)
    m2 = widedeep.load(path)
    pf = m2.predict(CRIT_TEXT_WDR)
    ps = m2.predict(crit.drop(["label"]))   # unlabeled rows
    if not isinstance(ps, np.ndarray) or ps.dtype != np.float32 or len(ps) != 7200 or not np.array_equal(pf, ps):
        raise AssertionError("predictions from the stream differ from the file's")
    unknown = crit.set_column(0, "label", pa.nulls(len(crit), pa.int8()))   # outcomes not known yet: not read
    if not np.array_equal(pf, m2.predict(unknown)):
        raise AssertionError("predictions with a null label column differ")
    ef, es = m2.evaluate(CRIT_TEXT_WDR), m2.evaluate(pl.read_parquet(CRIT_PQ))
    if ef["auc"] != es["auc"] or ef["samples"] != es["samples"] or not 0.5 < ef["auc"] < 1:
        raise AssertionError("auc %r from the file, %r from the stream" % (ef["auc"], es["auc"]))
    return "a loaded model's probabilities of 7200 unlabeled rows equal its .wdr predictions; AUC %.4f both ways" % \
        ef["auc"]


@test("py_refusals")
def _():
    out = os.path.join(T, "refused.wdr")
    seen = []

    def refused(fn, *want):
        try:
            fn()
        except widedeep.Error as e:
            if not all(w in str(e) for w in want):
                raise AssertionError("wanted %r in: %s" % (want, e))
            if os.path.exists(out):
                raise AssertionError("%s written" % out)
            seen.append(str(e))
            return
        raise AssertionError("not refused: %r" % (want,))
    lst = pa.table({"y": [0, 1], "tags": pa.array([[1.5], [2.5]], pa.list_(pa.float64()))})
    refused(lambda: widedeep.convert(lst, out, "y", cat="tags", buckets=10), "column 'tags' has format '+l<g>'")
    bad = pa.StringArray.from_buffers(3, pa.py_buffer(np.array([0, 2, 1, 3], dtype=np.int32).tobytes()),
                                      pa.py_buffer(b"abc"))
    tb = pa.Table.from_arrays([pa.array([0, 1, 0], pa.int8()), bad], names=["y", "s"])
    refused(lambda: widedeep.convert(tb, out, "y", cat="s", buckets=10), "column 's' (u): offset 1 at index 2",
            "offsets out of range")
    nl = pa.table({"y": pa.array([0, None, 1], pa.int8()), "s": ["a", "b", "c"]})
    refused(lambda: widedeep.convert(nl, out, "y", cat="s", buckets=10), "row 2", "a null label")

    def gen():
        yield pa.record_batch([pa.array([0, 1], pa.int8()), pa.array(["a", "b"])], names=["y", "s"])
        raise OSError("the disk went away")
    schema = pa.schema([("y", pa.int8()), ("s", pa.string())])
    refused(lambda: widedeep.convert(pa.RecordBatchReader.from_batches(schema, gen()), out, "y", cat="s", buckets=10),
            "the producer failed reading batch 2", "the disk went away")
    rd = pa.RecordBatchReader.from_batches(schema, iter([]))
    sink = pa.BufferOutputStream()   # and a subclass: ipc.open_stream's RecordBatchStreamReader (passed a name test)
    with pa.ipc.new_stream(sink, schema) as w:
        w.write_batch(pa.record_batch([pa.array([0, 1], pa.int8()), pa.array(["a", "b"])], schema=schema))
    for rd in (rd, pa.ipc.open_stream(sink.getvalue())):
        try:
            widedeep.convert(rd, out, "y", cat="s")
            raise AssertionError("a one-shot %s sized from the data was not refused" % type(rd).__name__)
        except ValueError as e:
            if "can be read once" not in str(e):
                raise
    once = pa.ipc.open_stream(sink.getvalue())   # a callable giving the same reader: 0 rows on the second pass
    refused(lambda: widedeep.convert(lambda: once, out, "y", cat="s"),
            "the stream gave 0 rows on the second pass, 2 on the first")
    name = "a" + "\u4e2d" * 30   # cut at 63 bytes inside a character: was a UnicodeDecodeError, no .status
    try:
        widedeep.convert(pa.table({"y": pa.array([0, 1], pa.int8()), name: [0.5, 1.5]}), out, "y", cat=name,
                         buckets=10)
        raise AssertionError("a float categorical column was not refused")
    except widedeep.Error as e:
        if "not supported as" not in str(e) or e.status != 11:   # WD_ERR_UNSUPPORTED
            raise AssertionError("status %r: %s" % (getattr(e, "status", None), e))
    return "; ".join(s.split(": ", 1)[1][:90] for s in seen)


@test("py_lists")
def _():
    # a list column: a multi-hot slot (Criteo's C1..C3 of each row as one list, nulls left out)
    tags = pa.array([[v for v in r if v is not None] if i % 7 else None for i, r in
                     enumerate(zip(*(crit.column(c).to_pylist() for c in ("C1", "C2", "C3"))))], pa.list_(pa.string()))
    tb = crit.select(["label"] + CRITEO_COLS[1:14] + ["C4", "C5"]).append_column("tags", tags)
    out = os.path.join(T, "lists.wdr")
    widedeep.convert(tb, out, "label", dense=DENSE, cat="C4,C5,tags", block=1000)
    info = run(WD, "inspect", "--verify", out)
    if not re.search(r"slot 2 +tags +\d+ buckets +multi-hot", info) or "verify:   OK" not in info:
        raise AssertionError("wd inspect: %s" % info[-600:])
    a = widedeep.Model.create(out, embed_dim=8, hidden=[16], seed=2)
    b = widedeep.Model.create(out, embed_dim=8, hidden=[16], seed=2)
    a.train(out, batch_size=500, no_shuffle=True, threads=2)
    b.train(pl.from_arrow(tb), batch_size=500, threads=2)   # Polars' list column as the stream
    if a.state() != b.state():
        raise AssertionError("the model trained from the stream differs from the file's")
    return "a list<string> column converts to a multi-hot slot (wd inspect --verify OK); training from " \
           "Polars' list column equals training from the .wdr bit for bit"


@test("py_interrupt")
def _():
    import signal
    m = widedeep.Model.create(CRIT_TEXT_WDR, embed_dim=8, hidden=[16], seed=1)
    ck = os.path.join(T, "stopped.wdm")
    steps = []

    def progress(p):   # Ctrl-C at step 5: the signal, as a terminal sends it
        steps.append(p["step"])
        if p["step"] == 5:
            signal.raise_signal(signal.SIGINT)
    try:
        m.train(CRIT_PQ, batch_size=256, checkpoint=ck, progress=progress)
        raise AssertionError("training was not interrupted")
    except KeyboardInterrupt:
        pass
    saved = widedeep.load(ck)   # the step boundary after the signal: the step in flight finishes
    if saved.info()["step"] != m.info()["step"] or not 5 <= m.info()["step"] <= 6 or saved.state() != m.state():
        raise AssertionError("stopped at step %d, saved step %d" % (m.info()["step"], saved.info()["step"]))
    stopped_at = m.info()["step"]
    m = widedeep.Model.create(CRIT_TEXT_WDR, embed_dim=8, hidden=[16], seed=1)

    def raises(p):   # the callback's own exception comes back as it is (was widedeep.Error)
        if p["step"] == 2:
            raise ZeroDivisionError("the callback's own")
    try:
        m.train(CRIT_PQ, batch_size=256, progress=raises)
        raise AssertionError("training went on past the callback's exception")
    except ZeroDivisionError as e:
        if str(e) != "the callback's own":
            raise
    m = widedeep.Model.create(CRIT_TEXT_WDR, embed_dim=8, hidden=[16], seed=1)   # a true result: stopped, no error
    r = m.train(CRIT_PQ, batch_size=256, checkpoint=ck, progress=lambda p: p["step"] == 3)
    saved = widedeep.load(ck)   # as Ctrl-C: the step in flight finishes
    if r["stopped"] != 1 or not 3 <= r["steps"] <= 4 or saved.info()["step"] != r["steps"] or \
            saved.state() != m.state():
        raise AssertionError("stopped %r after %r steps" % (r["stopped"], r["steps"]))
    return "SIGINT at step 5 of training from a stream: KeyboardInterrupt, the checkpoint saved at step %d " \
           "(the model's state, bit for bit); the callback's exception raised as it is; its True stops at step 3 or 4" \
        % stopped_at


print("# python: %d passed, %d failed, %d skipped" % (results["PASS"], results["FAIL"], results["SKIP"]))
