"""The reviewed tables of the matrix (see README.md).

- ``NOT_APPLICABLE``: pairs where the method cannot apply to the kind; the test checks
  that tclass raises a ``TclassError`` naming the method.
- ``KNOWN_GAPS``: pairs where tclass fails while the oracle succeeds; each runs as a
  strict xfail, so a fix makes the test fail until its entry is removed.
- ``DENSE_DIFFERS``: pairs whose result is meant to differ from the dense equivalent's
  (what a memory-mapped collection says about its files); the peer comparison still
  applies.
- ``PEER_DIFFERS``: methods (or pairs) whose results differ from the peer's on purpose;
  the peer comparison is left out for them (the dense oracle still applies).
- ``NO_WRITE_THROUGH``: methods whose result is meant not to reach a view's parent; the
  view kind's write-through check is left out for them (the oracles still apply).
"""

from __future__ import annotations

NOT_APPLICABLE: dict[tuple[str, str], str] = {
    **{
        (kind, method): "the out key is not a field: a record holds its declared fields only "
        "(the peer raises too: KeyError / AttributeError)"
        for kind in (
            "rec_flat",
            "rec_tc_flat",
            "rec_nested",
            "rec_values",
            "rec_autocast",
            "rec_nocast",
            "rec_tensor_only",
        )
        for method in ("cat_tensors", "rename_keys")
    },
    ("rec_frozen", "rename_keys"): "the out key is not a field (the peer raises too)",
    **{
        ("rec_nested", method): "the flattened keys of a nested field would not be fields "
        "(the peer raises ValueError too; flatten record.to_tensordict())"
        for method in ("flatten_keys", "unflatten_keys")
    },
    **{
        (kind, method): "the tensors already have files: saving them elsewhere needs "
        "copy_existing=True (the peer raises too, a RuntimeError)"
        for kind, methods in (
            ("memmapped", ("dumps", "load_", "load_memmap_", "memmap", "memmap_", "save")),
            ("memmap_loaded", ("memmap", "memmap_", "save")),
        )
        for method in methods
    },
    **{
        (store, "memmap_"): "a file's entries cannot become memory-mapped in place: memmap() "
        "copies them (the peer refuses too)"
        for store in ("h5", "zarr")
    },
    ("params", "__iadd__"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    (
        "params",
        "__ifloordiv__",
    ): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "__imod__"): "%= works in place (README), which autograd refuses on leaf "
    "parameters (no_grad runs it); the peer has no %=, so Python falls back to %: a new "
    "TensorDict",
    ("params", "__imul__"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "__ipow__"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "__isub__"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    (
        "params",
        "__itruediv__",
    ): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "abs_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "acos_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "add_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "addcdiv_"): "the recipe's numbers where torch takes tensors: an OperandError "
    "(the peer's TypeError) before autograd's refusal of in-place math on leaf parameters",
    ("params", "addcmul_"): "the recipe's numbers where torch takes tensors: an OperandError "
    "(the peer's TypeError) before autograd's refusal of in-place math on leaf parameters",
    ("params", "asin_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "atan_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "ceil_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "clamp_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "clamp_max_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "clamp_min_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "cos_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "cosh_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "div_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "erf_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "erfc_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "exp_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "expm1_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "floor_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "frac_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "lerp_"): "the recipe's numbers where torch takes tensors: an OperandError "
    "(the peer's TypeError) before autograd's refusal of in-place math on leaf parameters",
    ("params", "lgamma_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "log10_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "log1p_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "log2_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "log_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    (
        "params",
        "masked_fill_",
    ): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "maximum_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "minimum_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "mul_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    (
        "params",
        "nan_to_num_",
    ): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "neg_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "pow_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    (
        "params",
        "reciprocal_",
    ): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "round_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "rsqrt_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "sigmoid_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "sign_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "sin_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "sinh_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "sqrt_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "sub_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "tan_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "tanh_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    ("params", "trunc_"): "autograd refuses in-place math on leaf parameters (no_grad runs it)",
    **{
        (kind, method): "a record holds its declared fields only; the peer deprecates writing "
        "other keys through these methods (removed in its 0.17) and its set() refuses them"
        for kind in (
            "rec_flat",
            "rec_tc_flat",
            "rec_nested",
            "rec_values",
            "rec_autocast",
            "rec_nocast",
            "rec_tensor_only",
            "rec_frozen",
        )
        for method in (
            "create_nested",
            "rename_key_",
            "set_non_tensor",
            "setdefault",
            "stack_tensors",
        )
        if (kind, method) not in {("rec_frozen", "create_nested"), ("rec_frozen", "rename_key_")}
    },
    ("rec_frozen", "cat_tensors"): "a record holds its declared fields only (as above)",
    **{
        (store, "view"): "view() to a new batch size would read the entries into memory, "
        "where writes never reach the file: refused as the peer refuses it (reshape() or "
        "to_tensordict() copy; view(dtype) and set_lazy_legacy(True) views run)"
        for store in ("h5", "zarr")
    },
    **{
        (rows, method): reason
        for rows in ("h5_rows", "zarr_rows")
        for method, reason in (
            ("memmap_", "a view of a file's rows cannot become memory-mapped (memmap copies)"),
            ("refine_names", "a view's names are the file's (the peer refuses too)"),
            ("rename_", "a view's names are the file's (the peer refuses too)"),
            (
                "set_non_tensor",
                "a new Python value through a view of rows would leave the "
                "file's other rows without one (the peer fails too)",
            ),
            ("cat_tensors", "moving entries deletes every row of them from the file"),
            ("stack_tensors", "moving entries deletes every row of them from the file"),
            ("separates", "moving entries deletes every row of them from the file"),
        )
    },
}

KNOWN_GAPS: dict[tuple[str, str], str] = {}

RECORDS = (
    "rec_flat", "rec_tc_flat", "rec_nested", "rec_values", "rec_autocast", "rec_nocast",
    "rec_tensor_only", "rec_frozen",
)  # fmt: skip
_VALUED = ("td_values", "td_metadata", "rec_values")
_FILES = ("memmapped", "memmap_loaded")

PEER_DIFFERS: dict[str | tuple[str, str], str] = {
    **{
        (kind, "__contains__"): "the peer's records answer False for their own field names"
        for kind in RECORDS
    },
    **{
        (kind, "clear_refs_for_compile_"): "the peer's records return a TensorDict here"
        for kind in RECORDS
    },
    **{
        ("typed", method): "a TypedTensorDict's results keep its class (README); the peer "
        "returns a TensorDict from comparisons, reductions and pad"
        for method in (
            "__eq__",
            "__ge__",
            "__gt__",
            "__le__",
            "__lt__",
            "__ne__",
            "__ior__",
            "__ixor__",
            "__or__",
            "__ror__",
            "__rxor__",
            "__xor__",
            "amax",
            "amin",
            "cummax",
            "cummin",
            "max",
            "min",
            "mean",
            "nanmean",
            "nansum",
            "pad",
            "prod",
            "quantile",
            "std",
            "sum",
            "var",
        )  # fmt: skip
    },
    ("typed", "create_nested"): "a new empty node is a TensorDict (the peer makes one of the "
    "typed class, without its required fields)",
    ("typed", "auto_device_"): "the peer's TypedTensorDict keeps device None",
    **{
        (kind, method): "comparisons and bitwise ops keep Python values (README); the peer "
        "puts an empty TensorDict in their place"
        for kind in _VALUED
        for method in ("__ior__", "__ixor__", "__ne__", "__or__", "__ror__", "__rxor__", "__xor__")
    },
    **{
        (kind, method): "max/min/cummax/cummin results keep Python values and UnbatchedTensor "
        "entries (README); the peer drops them"
        for kind in (*_VALUED, "td_unbatched")
        for method in ("max", "min", "cummax", "cummin")
    },
    ("td_unbatched", "softmax"): "a scan along a batch dim leaves an UnbatchedTensor as it "
    "is, as reductions do (README); the peer applies softmax along the tensor's own dim of "
    "that number",
    **{
        ("rec_nested", method): "nested records keep their class in max/min results (the "
        "peer gives TensorDicts there)"
        for method in ("max", "min", "cummax", "cummin")
    },
    **{
        ("td_names", method): "the dims a result keeps keep their names (README); the peer "
        "drops the names of nested nodes or of the result"
        for method in ("amax", "amin", "__ior__", "__ixor__")
    },
    **{
        (kind, "to_h5"): "strings read back from HDF5 as str (README); the peer 0.15 gives bytes"
        for kind in _VALUED
    },
    **{
        ("h5", method): "clone/popitem read into memory (README); the peer returns a copy of "
        "the file"
        for method in ("clone", "popitem")
    },
    **{
        (store, "__imod__"): "an in-place operator returns the collection itself (the peer: "
        "a TensorDict)"
        for store in ("h5", "zarr")
    },
    **{
        (store, "replace"): "replace reads the file into a TensorDict and leaves it unchanged "
        "(README); the peer's copy shares the file, so its replace writes into it"
        for store in ("h5", "zarr")
    },
    **{
        ("zarr", method): "a zarr store's keys are listed sorted, as an HDF5 file's (README); "
        "the peer lists them in the store's own order, which zarr leaves unspecified"
        for method in ("keys", "items", "values", "to_namedtuple", "popitem")
    },
    **{
        (kind, method): "&=, |= and ^= work in place and keep the collection's lock (README); "
        "the peer has none of them, so Python falls back to &, |, ^: a new unlocked TensorDict"
        for kind in ("memmapped", "consolidated")
        for method in ("__ior__", "__ixor__")
    },
    **{
        (kind, "attrs"): "attrs() is a TensorDict of TensorAttrs records (README): a record's "
        "tensor fields cannot hold them; the peer returns the record's class"
        for kind in (*RECORDS, "typed")
    },
    ("td_unbatched", "attrs"): "attrs() describes an UnbatchedTensor too, so to(attrs) casts "
    "it (README); the peer puts the tensor itself there",
    ("td_values", "non_tensor_items"): "items come in key order (the peer lists nested ones first)",
    **{
        ("params", method): "the peer's TensorDictParams is inconsistent here (rename_keys "
        "gives a TensorDict, split_keys TensorDictParams, share_memory_ leaves it unlocked); "
        "tclass keeps TensorDictParams for in-place results and a TensorDict for new ones"
        for method in ("rename_keys", "split_keys", "share_memory_")
    },
    **{
        (kind, "is_memmap"): "is_memmap() looks at the data (README): a loaded collection's "
        "tensors are in its file; the peer's flag is False after load_memmap"
        for kind in ("memmap_loaded", "archive_tdz")
    },
}

DENSE_DIFFERS: dict[tuple[str, str], str] = {
    **{
        (kind, method): "a memory-mapped collection knows its files (the dense one raises "
        "NotSavedError or answers for plain tensors)"
        for kind in _FILES
        for method in (
            "entry_class",
            "is_memmap",
            "saved_path",
            "make_memmap",
            "make_memmap_from_storage",
            "make_memmap_from_tensor",
            "memmap_refresh_",
            "append_memmap_",
        )  # fmt: skip
    },
    ("archive_tdz", "is_memmap"): "an archive's tensors map its file (copy-on-write)",
    ("archive_tdz", "saved_path"): "an archive's tensors map its file, in no folder: None, as "
    "for memmap() without a folder (the dense one raises NotSavedError; the peer too)",
    **{
        (store, "is_contiguous"): "a file's entries are not in memory (False, as the peer)"
        for store in ("h5", "zarr")
    },
    **{
        (kind, "is_contiguous"): "a lazy stack's members are separate collections (False, "
        "as the peer)"
        for kind in ("lazy_dim0", "lazy_dim1", "lazy_nested")
    },
    **{
        (kind, "set_non_tensor"): "a lazy stack stores the value in each member and reads "
        "back a NonTensorStack of them, as the peer"
        for kind in ("lazy_dim0", "lazy_dim1", "lazy_nested")
    },
    **{
        (store, "share_memory_"): "refused, as the peer's: a file's entries are read anew "
        "each time, so there is nothing to share (the dense one shares its tensors)"
        for store in ("h5", "zarr")
    },
    **{
        (store, "__ixor__"): "the dense bool() shares its bool tensors, so ^= changes it; a "
        "file's entries are read, not shared"
        for store in ("h5", "zarr")
    },
    **{
        ("memmapped", method): "the rows of a locked memory-mapped collection stay locked, as "
        "the peer's (the dense one's rows are unlocked)"
        for method in ("unbind", "__iter__", "to_lazystack")
    },
    **{
        ("memmap_loaded", method): "a loaded collection's tensors have their files: saving "
        "them elsewhere (the recipe saves one first) needs copy_existing=True, as in the "
        "peer, which raises too (FileConflictError, a RuntimeError)"
        for method in ("dumps", "load_", "load_memmap_")
    },
    ("consolidated", "__reduce__"): "a consolidated collection unpickles from its buffer "
    "unlocked, as the peer's (a locked dense one unpickles locked)",
    ("consolidated", "is_consolidated"): "the kind is consolidated, its dense equivalent not",
    **{
        ("params", method): "the recipe set_()s into a permuted view of the parameters, "
        "which autograd refuses (the peer raises too; no_grad or an assignment runs it)"
        for method in ("__enter__", "__exit__")
    },
    **{
        ("params", method): "parameters require grad (and numpy() refuses them, as torch)"
        for method in ("entry_class", "requires_grad", "numpy")
    },
    **{
        ("permuted", method): "a permuted collection's leaves are not contiguous, so torch "
        "refuses view() on them"
        for method in ("is_contiguous", "view")
    },
    ("rec_frozen", "unlock_"): "a frozen record refuses unlock_() and stays locked (its dense "
    "equivalent is a locked TensorDict)",
}

_ROWS = ("h5_rows", "zarr_rows")
PEER_DIFFERS.update(
    {
        (rows, method): reason
        for rows in _ROWS
        for method, reason in (
            ("__imod__", "an in-place operator returns the view itself (the peer: a TensorDict)"),
            (
                "cpu",
                "to a device: the same rows of the file read there, as for the file itself "
                "(the peer reads a TensorDict)",
            ),
            (
                "is_contiguous",
                "a view's entries are in the file (False, as for the file; the peer says True)",
            ),
            (
                "popitem",
                "the entry is read into memory before it is deleted (the peer returns "
                "a view of the deleted group)",
            ),
            ("split_keys", "the pieces are read into TensorDicts (the peer keeps a view)"),
            (
                "auto_device_",
                "a view's device is its file's, which auto_device_ records (the "
                "peer's view keeps None)",
            ),
            (
                "replace",
                "replace reads the rows into a TensorDict and leaves the file "
                "unchanged (README); the peer's view writes into the file",
            ),
        )
    }
)
PEER_DIFFERS.update(
    {
        (kind, "masked_select"): "the selected rows are read into a TensorDict, nested ones "
        "too (the peer's TensorDict holds views of the file's nested groups)"
        for kind in ("h5", "zarr", *_ROWS)
    }
)
PEER_DIFFERS.update(
    {
        ("zarr_rows", method): "a zarr store's keys are listed sorted, as an HDF5 file's "
        "(README); the peer lists them in the store's own order"
        for method in ("keys", "items", "values", "to_namedtuple", "popitem")
    }
)
DENSE_DIFFERS.update(
    {
        **{
            (rows, "is_contiguous"): "a file's entries are not in memory (False, as the peer)"
            for rows in _ROWS
        },
        **{
            (rows, "__ixor__"): "the dense bool() shares its bool tensors, so ^= changes it; "
            "a file's entries are read, not shared"
            for rows in _ROWS
        },
    }
)

NO_WRITE_THROUGH: dict[str, str] = {
    "set": "set() (not in place) replaces the entry of an index result, as the peer's: the "
    "parent keeps its tensor (set(..., inplace=True) and td[key][...] = v write through)",
}
