"""widedeep from Python: the C header (widedeep.h) under a thin extension.

Data comes as .wdr files (``wd convert``'s records) or as Arrow streams:
a Parquet path (read with pyarrow, batch by batch), a pyarrow Table or
RecordBatchReader, anything with ``__arrow_c_stream__`` (Polars frames,
DuckDB relations), or a callable returning one of these (opened once per
pass). Columns map by name exactly as ``wd convert --format csv`` maps a
CSV file's (label, dense, categorical, derived slots), so a stream and a
CSV file of the same rows give the same .wdr. Errors raise
:class:`widedeep.Error` with the library's message.
"""
import os
import sys

import numpy as np

from . import _wd

Error = _wd.Error
__version__ = _wd.version

_ONCE = "can be read once, and {what} needs a second pass over the data: give buckets= or schema_from= " \
        "(or pass a table, a Parquet path or a callable that opens the stream again)"


def _names(v):
    if v is None or isinstance(v, str):
        return v
    return ",".join(v)


def _is_path(x):
    return isinstance(x, (str, os.PathLike))


def _parquet_stream(path, batch_rows=65536):
    import pyarrow as pa
    import pyarrow.parquet as pq
    f = pq.ParquetFile(path)   # streamed: one batch of a row group at a time
    return pa.RecordBatchReader.from_batches(f.schema_arrow, f.iter_batches(batch_size=batch_rows))


def _ipc_stream(path):
    import pyarrow as pa
    import pyarrow.ipc as ipc
    try:
        f = ipc.open_file(path)
        return pa.RecordBatchReader.from_batches(f.schema, (f.get_batch(i) for i in range(f.num_record_batches)))
    except pa.ArrowInvalid:
        return ipc.open_stream(path)


def _one_shot(source):
    """A pyarrow RecordBatchReader, or one of its subclasses (ipc.open_stream's): read once."""
    pa = sys.modules.get("pyarrow")   # a pyarrow object means pyarrow is imported
    return pa is not None and isinstance(source, pa.RecordBatchReader)


def _capsule_of(obj):
    if _is_path(obj):
        p = os.fspath(obj)
        obj = _parquet_stream(p) if not p.endswith((".arrow", ".feather", ".ipc", ".arrows")) else _ipc_stream(p)
    if hasattr(obj, "__arrow_c_stream__"):
        return obj.__arrow_c_stream__()
    raise TypeError("not an Arrow stream: %r (a Parquet path, a pyarrow Table or RecordBatchReader, a Polars frame, "
                    "a DuckDB relation, anything with __arrow_c_stream__)" % type(obj).__name__)


def _factory(source, what):
    """A callable giving a fresh PyCapsule of the source's stream per call."""
    if callable(source) and not hasattr(source, "__arrow_c_stream__"):
        return lambda: _capsule_of(source())
    if _is_path(source):
        return lambda: _capsule_of(source)
    if hasattr(source, "fetch_record_batch") and hasattr(source,
                                                         "execute"):   # a DuckDB relation: run it again per pass
        return lambda: source.fetch_record_batch(65536).__arrow_c_stream__()
    used = []

    def f():
        if used and _one_shot(source):
            raise ValueError(("a %s " % type(source).__name__) + _ONCE.format(what=what))
        used.append(1)
        return _capsule_of(source)
    return f


def convert(source, out, label, dense=None, cat=None, id=None, derive=None, buckets=0, slot_buckets=None, delimiter=",",
            dense_raw=False, schema_from=None, min_count=0, vocab_capacity=0, extend_vocab=False, threads=1, block=0,
            level=0, bad_lines="error"):
    """Converts an Arrow stream to a .wdr file, with ``wd convert --format csv``'s options (lists or
    comma-separated names). Returns the report: rows, bad_rows, blocks, bytes_out, seconds."""
    if bad_lines not in ("error", "skip"):
        raise ValueError("bad_lines: 'error' or 'skip'")
    if delimiter == "tab":
        delimiter = "\t"
    what = "extend_vocab" if extend_vocab else "min_count" if min_count else "sizing the tables from the data"
    two_passes = extend_vocab or min_count or (not buckets and schema_from is None and slot_buckets is None)
    if _one_shot(source) and two_passes:
        raise ValueError("a RecordBatchReader " + _ONCE.format(what=what))
    return _wd.convert(_factory(source, what), os.fspath(out), label, dense=_names(dense), cat=_names(cat), id=id,
                       derive=_names(derive), buckets=buckets, slot_buckets=_names(slot_buckets), delimiter=delimiter,
                       dense_raw=bool(dense_raw), schema_from=None if schema_from is None else os.fspath(schema_from),
                       min_count=min_count, vocab_capacity=vocab_capacity, extend_vocab=bool(extend_vocab),
                       threads=threads,
                       block=block, level=level, skip_bad=bad_lines == "skip")


def _wdr_files(data):
    """data as a list of .wdr paths, or None when it is a stream."""
    if _is_path(data) and os.fspath(data).endswith(".wdr"):
        return [os.fspath(data)]
    if isinstance(data, (list, tuple)) and data and all(_is_path(x) and os.fspath(x).endswith(".wdr") for x in data):
        return [os.fspath(x) for x in data]
    return None


class Model:
    """A Wide&Deep model (wd_model). Create one for a .wdr file's schema, or load a .wdm checkpoint."""

    def __init__(self, handle):
        self._m = handle

    @classmethod
    def create(cls, schema_from, embed_dim=0, hidden=None, optimizer="adagrad", lr_deep=0.0, lr_wide=0.0, seed=0):
        """A new model for the schema (and input format, vocabularies) of the .wdr file schema_from."""
        return cls(_wd.model_create(os.fspath(schema_from), embed_dim=embed_dim, hidden=hidden, optimizer=optimizer,
                                    lr_deep=lr_deep, lr_wide=lr_wide, seed=seed))

    @classmethod
    def load(cls, path):
        return cls(_wd.model_load(os.fspath(path)))

    def save(self, path):
        self._m.save(os.fspath(path))

    def train(self, data, valid=None, batch_size=0, epochs=0, threads=0, no_shuffle=False, max_steps=0, checkpoint=None,
              checkpoint_every=0, eval_every=0, progress=None, loader_threads=0, loader_ram=0):
        """Trains on .wdr files or an Arrow stream (read once, in order, batch_size rows a step: a stream has no
        epochs). The GIL is released; progress(dict) is called after every step: a true result stops training
        there (the checkpoint, if given, saved; the report's "stopped" is 1), an exception it raises stops it the
        same way and is raised again as it is. Ctrl-C stops at the next step, saves the checkpoint (if given) and
        raises KeyboardInterrupt. loader_threads, loader_ram (bytes): the budgets of the threads that decode the
        files or the stream ahead of training (0: the library's defaults)."""
        files = _wdr_files(data)
        valid_files = _wdr_files(valid) if valid is not None else None
        if valid is not None and valid_files is None:
            raise TypeError("valid: .wdr files")
        kw = dict(valid=valid_files, batch_size=batch_size, epochs=epochs, threads=threads, no_shuffle=bool(no_shuffle),
                  max_steps=max_steps, checkpoint=None if checkpoint is None else os.fspath(checkpoint),
                  checkpoint_every=checkpoint_every, eval_every=eval_every, progress=progress,
                  loader_threads=loader_threads, loader_ram=loader_ram)
        if files is not None:
            return self._m.train(files=files, **kw)
        return self._m.train(stream=_factory(data, "training")(), **kw)

    def predict(self, data, batch_size=4096):
        """Probabilities (float32 NumPy array), one per row of an Arrow stream (its label column may be absent)
        or per sample of .wdr files in file order."""
        files = _wdr_files(data)
        if files is not None:
            return np.frombuffer(self._m.evaluate_files(files, batch_size=batch_size, predictions=True)["predictions"],
                                 dtype=np.float32)
        p, _ = self._m.predict_stream(_factory(data, "prediction")(), batch_size=batch_size, labels=False)
        return np.frombuffer(p, dtype=np.float32)

    def evaluate(self, data, batch_size=4096, threads=0):
        """AUC (exact), log loss, mean prediction, CTR and sample count of .wdr files or a labeled stream."""
        files = _wdr_files(data)
        if files is not None:
            r = self._m.evaluate_files(files, batch_size=batch_size, threads=threads)
            del r["predictions"]
            return r
        p, y = self._m.predict_stream(_factory(data, "evaluation")(), batch_size=batch_size, labels=True)
        auc, ll = _wd.metrics(p, y)
        pa_, ya = np.frombuffer(p, dtype=np.float32), np.frombuffer(y, dtype=np.float32)
        return {"auc": auc, "logloss": ll, "mean_pred": float(pa_.mean()) if len(pa_) else float("nan"),
                "ctr": float(ya.mean()) if len(ya) else float("nan"), "samples": len(pa_)}

    def info(self):
        return self._m.info()

    def state(self):
        """Parameters and optimizer state as bytes: equal bytes, the same model bit for bit."""
        return self._m.state()


load = Model.load


def train(model, data, **kw):
    return model.train(data, **kw)


def evaluate(model, data, **kw):
    return model.evaluate(data, **kw)


def predict(model, data, **kw):
    return model.predict(data, **kw)
