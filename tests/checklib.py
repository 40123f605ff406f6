"""What tests/onnx_check.py and tests/tb_check.py share: run(main) calls
main(), which prints its one "ok: ..." line and returns None, or returns the
reason it failed; a reason (or any exception, with its message) is printed as
"fail: ..." and ends the program with status 1."""
import sys


def run(main):
    try:
        why = main()
    except Exception as e:   # noqa: BLE001 - any failure is the test's failure, with its message
        why = f"{type(e).__name__}: {e}"
    if why:
        print(f"fail: {why}")
        sys.exit(1)
