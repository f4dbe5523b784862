"""The intern table of ir/symbolic.py and the memo tables of tinylab/memo.py: equal expressions
are one object while alive, dead ones leave the intern table once no memo holds them (so memory
stays bounded), every memo is bounded and cleared by one call, and threads building the same
expression at once still get one object."""
import gc
import threading

from tinylab import memo
from tinylab.ir import symbolic as sym


def _size_after_collect() -> int:
    memo.clear_all()  # the memo tables hold expressions strongly until they forget
    gc.collect()
    return len(sym._INTERN)


def test_equal_expressions_are_one_object_and_dead_ones_leave():
    before = _size_after_collect()
    a = sym.var("intern_a", 0, 97) * 5 + 3
    b = sym.var("intern_a", 0, 97) * 5 + 3
    assert a is b
    assert _size_after_collect() > before
    del a, b
    assert _size_after_collect() == before


def test_threads_building_one_expression_get_one_object():
    found, barrier = [], threading.Barrier(4)

    def build():
        barrier.wait()
        found.append((sym.var("intern_t", 0, 1000) * 7 + 11) // 3)

    threads = [threading.Thread(target=build) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(item is found[0] for item in found)
    assert str(found[0]) == str((sym.var("intern_t", 0, 1000) * 7 + 11) // 3)


def test_every_ir_memo_is_registered_bounded_and_cleared_by_one_call():
    names = set(memo.sizes())
    assert {"symbolic_sums", "symbolic_quotients", "simplify_valid_simplified",
            "simplify_valid_replaced", "view_index"} <= names
    x = sym.var("memo_x", 0, 63)
    for k in range(1, 40):
        (x * k + 1) // 4
    assert sum(memo.sizes().values()) > 0
    memo.clear_all()
    assert sum(memo.sizes().values()) == 0
    small = memo.Memo("test_small_table", limit=3)
    for k in range(10):
        small[k] = k
    assert len(small) <= 3 and small[9] == 9
    del memo.MEMOS["test_small_table"]
