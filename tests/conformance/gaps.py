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
"""

from __future__ import annotations

NOT_APPLICABLE: dict[tuple[str, str], str] = {
    (
        "rec_autocast",
        "cat_tensors",
    ): "UnknownFieldError: Autocast has no field 'aa' (fields: a, b, c); did you mean 'a'?",
    (
        "rec_flat",
        "cat_tensors",
    ): "UnknownFieldError: Flat has no field 'aa' (fields: a, b, c); did you mean 'a'?",
    (
        "rec_nested",
        "cat_tensors",
    ): "UnknownFieldError: Nested has no field 'aa' (fields: a, b, c, n); did you mean 'a'?",
    (
        "rec_nocast",
        "cat_tensors",
    ): "UnknownFieldError: Nocast has no field 'aa' (fields: a, b, c); did you mean 'a'?",
    (
        "rec_tc_flat",
        "cat_tensors",
    ): "UnknownFieldError: FlatTC has no field 'aa' (fields: a, b, c); did you mean 'a'?",
    (
        "rec_tensor_only",
        "cat_tensors",
    ): "UnknownFieldError: TensorOnly has no field 'aa' (fields: a, b, c); did you mean 'a'?",
    (
        "rec_values",
        "cat_tensors",
    ): "UnknownFieldError: Valued has no field 'aa' (fields: a, b, c, label); did you mean 'a'?",
    (
        "memmapped",
        "dumps",
    ): "FileConflictError: the tensor for 'a.memmap' is already saved in <tmp>; pass copy_existing=T...",
    (
        "rec_nested",
        "flatten_keys",
    ): "UnknownFieldError: Nested.flatten_keys: the fields ['n'] hold nested collections, whose flat...",
    (
        "memmapped",
        "load_",
    ): "FileConflictError: the tensor for 'a.memmap' is already saved in <tmp>; pass copy_existing=T...",
    (
        "memmapped",
        "load_memmap_",
    ): "FileConflictError: the tensor for 'a.memmap' is already saved in <tmp>; pass copy_existing=T...",
    (
        "memmap_loaded",
        "memmap",
    ): "FileConflictError: the tensor for 'a.memmap' is already saved in <tmp>; pass copy_existing=T...",
    (
        "memmapped",
        "memmap",
    ): "FileConflictError: the tensor for 'a.memmap' is already saved in <tmp>; pass copy_existing=T...",
    (
        "h5",
        "memmap_",
    ): "UnsupportedError: a PersistentTensorDict cannot become memory-mapped in place: its entries l...",
    (
        "memmap_loaded",
        "memmap_",
    ): "FileConflictError: the tensor for 'a.memmap' is already saved in <tmp>; pass copy_existing=T...",
    (
        "memmapped",
        "memmap_",
    ): "FileConflictError: the tensor for 'a.memmap' is already saved in <tmp>; pass copy_existing=T...",
    (
        "rec_autocast",
        "rename_keys",
    ): "UnknownFieldError: Autocast has no field 'c2' (fields: a, b, c); did you mean 'c'?",
    (
        "rec_flat",
        "rename_keys",
    ): "UnknownFieldError: Flat has no field 'c2' (fields: a, b, c); did you mean 'c'?",
    (
        "rec_nested",
        "rename_keys",
    ): "UnknownFieldError: Nested has no field 'c2' (fields: a, b, c, n); did you mean 'c'?",
    (
        "rec_nocast",
        "rename_keys",
    ): "UnknownFieldError: Nocast has no field 'c2' (fields: a, b, c); did you mean 'c'?",
    (
        "rec_tc_flat",
        "rename_keys",
    ): "UnknownFieldError: FlatTC has no field 'c2' (fields: a, b, c); did you mean 'c'?",
    (
        "rec_tensor_only",
        "rename_keys",
    ): "UnknownFieldError: TensorOnly has no field 'c2' (fields: a, b, c); did you mean 'c'?",
    (
        "rec_values",
        "rename_keys",
    ): "UnknownFieldError: Valued has no field 'c2' (fields: a, b, c, label); did you mean 'c'?",
    (
        "memmap_loaded",
        "save",
    ): "FileConflictError: the tensor for 'a.memmap' is already saved in <tmp>; pass copy_existing=T...",
    (
        "memmapped",
        "save",
    ): "FileConflictError: the tensor for 'a.memmap' is already saved in <tmp>; pass copy_existing=T...",
    (
        "rec_nested",
        "unflatten_keys",
    ): "UnknownFieldError: Nested.flatten_keys: the fields ['n'] hold nested collections, whose flat...",
}

KNOWN_GAPS: dict[tuple[str, str], str] = {
    (
        "rec_frozen",
        "load_",
    ): "ClassResolutionError: <tmp> holds a conformance.kinds.tclass_Frozen, a class not defined in ...",
    (
        "rec_frozen",
        "load_memmap_",
    ): "ClassResolutionError: <tmp> holds a conformance.kinds.tclass_Frozen, a class not defined in ...",
    ("rec_autocast", "__delitem__"): "dense: ran; tclass raised AttributeError: __delitem__",
    ("rec_flat", "__delitem__"): "dense: ran; tclass raised AttributeError: __delitem__",
    (
        "rec_frozen",
        "__delitem__",
    ): "dense: error: want RuntimeError, got AttributeError: __delitem__",
    ("rec_nested", "__delitem__"): "dense: ran; tclass raised AttributeError: __delitem__",
    ("rec_nocast", "__delitem__"): "dense: ran; tclass raised AttributeError: __delitem__",
    ("rec_tc_flat", "__delitem__"): "dense: ran; tclass raised AttributeError: __delitem__",
    ("rec_tensor_only", "__delitem__"): "dense: ran; tclass raised AttributeError: __delitem__",
    ("rec_values", "__delitem__"): "dense: ran; tclass raised AttributeError: __delitem__",
    (
        "consolidated",
        "__enter__",
    ): "peer: ran; tclass raised LockedError: cannot set 'a' in a locked TensorDict. Unlock it first...",
    (
        "memmapped",
        "__enter__",
    ): "peer: ran; tclass raised LockedError: cannot set 'a' in a locked TensorDict saved in <tmp>: ...",
    (
        "params",
        "__enter__",
    ): "dense: ran; tclass raised BatchSizeError: set_: cannot copy a value of shape [4, 3, 2] into ...",
    (
        "rec_frozen",
        "__enter__",
    ): "peer: ran; tclass raised LockedError: cannot set 'a' in a locked TensorDict. Unlock it first...",
    ("typed", "__eq__"): "peer: result.class: want 'TensorDict', got 'Typed'",
    (
        "consolidated",
        "__exit__",
    ): "peer: ran; tclass raised LockedError: cannot set 'a' in a locked TensorDict. Unlock it first...",
    (
        "memmapped",
        "__exit__",
    ): "peer: ran; tclass raised LockedError: cannot set 'a' in a locked TensorDict saved in <tmp>: ...",
    (
        "params",
        "__exit__",
    ): "dense: ran; tclass raised BatchSizeError: set_: cannot copy a value of shape [4, 3, 2] into ...",
    (
        "rec_frozen",
        "__exit__",
    ): "peer: ran; tclass raised LockedError: cannot set 'a' in a locked TensorDict. Unlock it first...",
    ("typed", "__ge__"): "peer: result.class: want 'TensorDict', got 'Typed'",
    ("h5", "__getitem__"): "peer: result.class: want '_SubTensorDict', got 'TensorDict'",
    ("h5", "__getitems__"): "peer: result.class: want '_SubTensorDict', got 'TensorDict'",
    ("typed", "__gt__"): "peer: result.class: want 'TensorDict', got 'Typed'",
    (
        "params",
        "__iadd__",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "__ifloordiv__",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("h5", "__imod__"): "peer: result.class: want 'TensorDict', got 'PersistentTensorDict'",
    (
        "params",
        "__imod__",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "__imul__",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("consolidated", "__ior__"): "peer: result.is_locked: want False, got True",
    ("memmapped", "__ior__"): "peer: result.is_locked: want False, got True",
    ("rec_values", "__ior__"): "peer: result['label']: want TensorDict[3, 4], got ('py', 'hello')",
    ("td_metadata", "__ior__"): "peer: result['meta']: want TensorDict[3, 4], got ('py', 'config')",
    ("td_names", "__ior__"): "peer: result.names: want (None, None), got ('x', 'y')",
    ("td_values", "__ior__"): "peer: result['label']: want TensorDict[3, 4], got ('py', 'hello')",
    ("typed", "__ior__"): "peer: result.class: want 'TensorDict', got 'Typed'",
    (
        "params",
        "__ipow__",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "__isub__",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("memmapped", "__iter__"): "dense: result[0].is_locked: want False, got True",
    (
        "params",
        "__itruediv__",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("consolidated", "__ixor__"): "peer: result.is_locked: want False, got True",
    ("h5", "__ixor__"): "dense: after['c']: values differ",
    ("memmapped", "__ixor__"): "peer: result.is_locked: want False, got True",
    ("rec_values", "__ixor__"): "peer: result['label']: want TensorDict[3, 4], got ('py', 'hello')",
    (
        "td_metadata",
        "__ixor__",
    ): "peer: result['meta']: want TensorDict[3, 4], got ('py', 'config')",
    ("td_names", "__ixor__"): "peer: result.names: want (None, None), got ('x', 'y')",
    ("td_values", "__ixor__"): "peer: result['label']: want TensorDict[3, 4], got ('py', 'hello')",
    ("typed", "__ixor__"): "peer: result.class: want 'TensorDict', got 'Typed'",
    ("typed", "__le__"): "peer: result.class: want 'TensorDict', got 'Typed'",
    ("typed", "__lt__"): "peer: result.class: want 'TensorDict', got 'Typed'",
    (
        "rec_values",
        "__ne__",
    ): "peer: result['label']: want TensorDict[3, 4], got tensor torch.bool [3, 4]",
    (
        "td_metadata",
        "__ne__",
    ): "peer: result['meta']: want TensorDict[3, 4], got tensor torch.bool [3, 4]",
    (
        "td_values",
        "__ne__",
    ): "peer: result['label']: want TensorDict[3, 4], got tensor torch.bool [3, 4]",
    ("typed", "__ne__"): "peer: result.class: want 'TensorDict', got 'Typed'",
    ("rec_values", "__or__"): "peer: result['label']: want TensorDict[3, 4], got ('py', 'hello')",
    ("td_metadata", "__or__"): "peer: result['meta']: want TensorDict[3, 4], got ('py', 'config')",
    ("td_values", "__or__"): "peer: result['label']: want TensorDict[3, 4], got ('py', 'hello')",
    ("typed", "__or__"): "peer: result.class: want 'TensorDict', got 'Typed'",
    ("consolidated", "__reduce__"): "dense: result.is_locked: want True, got False",
    ("rec_values", "__ror__"): "peer: result['label']: want TensorDict[3, 4], got ('py', 'hello')",
    ("td_metadata", "__ror__"): "peer: result['meta']: want TensorDict[3, 4], got ('py', 'config')",
    ("td_values", "__ror__"): "peer: result['label']: want TensorDict[3, 4], got ('py', 'hello')",
    ("typed", "__ror__"): "peer: result.class: want 'TensorDict', got 'Typed'",
    ("rec_values", "__rxor__"): "peer: result['label']: want TensorDict[3, 4], got ('py', 'hello')",
    (
        "td_metadata",
        "__rxor__",
    ): "peer: result['meta']: want TensorDict[3, 4], got ('py', 'config')",
    ("td_values", "__rxor__"): "peer: result['label']: want TensorDict[3, 4], got ('py', 'hello')",
    ("typed", "__rxor__"): "peer: result.class: want 'TensorDict', got 'Typed'",
    ("rec_values", "__xor__"): "peer: result['label']: want TensorDict[3, 4], got ('py', 'hello')",
    ("td_metadata", "__xor__"): "peer: result['meta']: want TensorDict[3, 4], got ('py', 'config')",
    ("td_values", "__xor__"): "peer: result['label']: want TensorDict[3, 4], got ('py', 'hello')",
    ("typed", "__xor__"): "peer: result.class: want 'TensorDict', got 'Typed'",
    (
        "params",
        "abs_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "acos_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "add_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("lazy_dim0", "amax"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("lazy_nested", "amax"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("td_names", "amax"): "peer: result['n'].names: want (None,), got ('x',)",
    (
        "td_unbatched",
        "amax",
    ): "peer: result['u']: want tensor torch.float32 [2, 3], got tensor torch.float32 [2]",
    ("typed", "amax"): "peer: result.class: want 'TensorDict', got 'Typed'",
    ("lazy_dim0", "amin"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("lazy_nested", "amin"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("td_names", "amin"): "peer: result['n'].names: want (None,), got ('x',)",
    (
        "td_unbatched",
        "amin",
    ): "peer: result['u']: want tensor torch.float32 [2, 3], got tensor torch.float32 [2]",
    ("typed", "amin"): "peer: result.class: want 'TensorDict', got 'Typed'",
    ("memmap_loaded", "append_memmap_"): "dense: raised AppendError; tclass ran",
    ("memmapped", "append_memmap_"): "dense: raised AppendError; tclass ran",
    (
        "lazy_ragged",
        "as_tensor",
    ): "peer: ran; tclass raised HeterogeneousEntryError: entry 'r' has shape [4, 2] in member 1 but...",
    (
        "td_unbatched",
        "as_tensor",
    ): "peer: ran; tclass raised BatchMismatchError: batch dimension mismatch for key 'u': its shape...",
    (
        "params",
        "asin_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "atan_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "rec_values",
        "atleast_3d",
    ): "peer: result['label']: want ('seq', [('seq', [('seq', [('py', 'hello'), ('py', 'hello'), ('p...",
    (
        "td_values",
        "atleast_3d",
    ): "peer: result['label']: want ('seq', [('seq', [('seq', [('py', 'hello'), ('py', 'hello'), ('p...",
    ("rec_autocast", "attrs"): "peer: result.class: want 'Autocast', got 'TensorDict'",
    ("rec_flat", "attrs"): "peer: result.class: want 'Flat', got 'TensorDict'",
    ("rec_frozen", "attrs"): "peer: result.class: want 'Frozen', got 'TensorDict'",
    ("rec_nested", "attrs"): "peer: result.class: want 'Nested', got 'TensorDict'",
    ("rec_nocast", "attrs"): "peer: result.class: want 'Nocast', got 'TensorDict'",
    ("rec_tc_flat", "attrs"): "peer: result.class: want 'FlatTC', got 'TensorDict'",
    ("rec_tensor_only", "attrs"): "peer: result.class: want 'TensorOnly', got 'TensorDict'",
    ("rec_values", "attrs"): "peer: result.class: want 'Valued', got 'TensorDict'",
    (
        "td_unbatched",
        "attrs",
    ): "peer: result['u']: want tensor torch.float32 [2, 3], got TensorAttrs[]",
    ("typed", "attrs"): "peer: result.class: want 'Typed', got 'TensorDict'",
    (
        "h5",
        "auto_device_",
    ): "dense: ran; tclass raised UnsupportedError: a PersistentTensorDict cannot record a device",
    ("lazy_dim0", "auto_device_"): "dense: result['n'].device: want 'cpu', got 'None'",
    ("lazy_dim1", "auto_device_"): "dense: result['n'].device: want 'cpu', got 'None'",
    ("lazy_nested", "auto_device_"): "dense: result['n'].device: want 'cpu', got 'None'",
    (
        "lazy_ragged",
        "auto_device_",
    ): "peer: ran; tclass raised HeterogeneousEntryError: entry 'r' has shape [4, 2] in member 1 but...",
    (
        "params",
        "auto_device_",
    ): "dense: ran; tclass raised UnsupportedError: a TensorDictParams cannot record a device",
    ("typed", "auto_device_"): "peer: result.device: want 'None', got 'cpu'",
    (
        "td_names",
        "broadcast_to",
    ): "peer: result['n'].names: want (None, None, None), got (None, 'x', 'y')",
    (
        "h5",
        "cat_from_tensordict",
    ): "dense: ran; tclass raised AttributeError: 'PersistentTensorDict' object has no attribute 'se...",
    (
        "h5",
        "cat_tensors",
    ): "dense: ran; tclass raised AttributeError: 'PersistentTensorDict' object has no attribute 'ex...",
    (
        "rec_frozen",
        "cat_tensors",
    ): "dense: error: want RuntimeError, got UnknownFieldError: Frozen has no field 'aa' (fields: a,...",
    (
        "params",
        "ceil_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "clamp_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "clamp_max_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "clamp_min_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "h5",
        "clear_device_",
    ): "dense: ran; tclass raised AttributeError: 'PersistentTensorDict' object has no attribute 'cl...",
    ("h5", "clone"): "peer: result.class: want 'PersistentTensorDict', got 'TensorDict'",
    (
        "h5",
        "consolidate",
    ): "dense: ran; tclass raised UnsupportedError: cannot consolidate a PersistentTensorDict",
    (
        "params",
        "consolidate",
    ): "dense: ran; tclass raised UnsupportedError: cannot consolidate a TensorDictParams",
    ("typed", "consolidate"): "peer: result.class: want 'Typed', got 'TensorDict'",
    (
        "params",
        "copy_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("h5", "copy_at_"): "dense: result['a']: values differ",
    (
        "params",
        "cos_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "cosh_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("consolidated", "cpu"): "dense: result.is_locked: want True, got False",
    (
        "h5",
        "cpu",
    ): "dense: ran; tclass raised AttributeError: 'PersistentTensorDict' object has no attribute 'cpu'",
    (
        "rec_autocast",
        "create_nested",
    ): "dense: ran; tclass raised UnknownFieldError: Autocast has no field 'fresh' (fields: a, b, c)",
    (
        "rec_flat",
        "create_nested",
    ): "dense: ran; tclass raised UnknownFieldError: Flat has no field 'fresh' (fields: a, b, c)",
    (
        "rec_nested",
        "create_nested",
    ): "dense: ran; tclass raised UnknownFieldError: Nested has no field 'fresh' (fields: a, b, c, n)",
    (
        "rec_nocast",
        "create_nested",
    ): "dense: ran; tclass raised UnknownFieldError: Nocast has no field 'fresh' (fields: a, b, c)",
    (
        "rec_tc_flat",
        "create_nested",
    ): "dense: ran; tclass raised UnknownFieldError: FlatTC has no field 'fresh' (fields: a, b, c)",
    (
        "rec_tensor_only",
        "create_nested",
    ): "dense: ran; tclass raised UnknownFieldError: TensorOnly has no field 'fresh' (fields: a, b, c)",
    (
        "rec_values",
        "create_nested",
    ): "dense: ran; tclass raised UnknownFieldError: Valued has no field 'fresh' (fields: a, b, c, l...",
    ("typed", "create_nested"): "peer: result['fresh'].class: want 'Typed', got 'TensorDict'",
    (
        "lazy_dim0",
        "cummax",
    ): "peer: result[0].class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "lazy_nested",
        "cummax",
    ): "peer: result[0].class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("rec_nested", "cummax"): "peer: result[0]['n'].class: want 'TensorDict', got 'Inner'",
    (
        "rec_values",
        "cummax",
    ): "peer: result[0]: keys: want ['a', 'b', 'c'], got ['a', 'b', 'c', 'label']",
    (
        "td_metadata",
        "cummax",
    ): "peer: result[0]: keys: want ['a', 'b', 'c', 'n'], got ['a', 'b', 'c', 'meta', 'n']",
    (
        "td_unbatched",
        "cummax",
    ): "peer: result[0]: keys: want ['a', 'b', 'c', 'n'], got ['a', 'b', 'c', 'n', 'u']",
    (
        "td_values",
        "cummax",
    ): "peer: result[0]: keys: want ['a', 'b', 'c', 'n'], got ['a', 'b', 'c', 'label', 'n']",
    ("typed", "cummax"): "peer: result[0].class: want 'TensorDict', got 'Typed'",
    (
        "lazy_dim0",
        "cummin",
    ): "peer: result[0].class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "lazy_nested",
        "cummin",
    ): "peer: result[0].class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("rec_nested", "cummin"): "peer: result[0]['n'].class: want 'TensorDict', got 'Inner'",
    (
        "rec_values",
        "cummin",
    ): "peer: result[0]: keys: want ['a', 'b', 'c'], got ['a', 'b', 'c', 'label']",
    (
        "td_metadata",
        "cummin",
    ): "peer: result[0]: keys: want ['a', 'b', 'c', 'n'], got ['a', 'b', 'c', 'meta', 'n']",
    (
        "td_unbatched",
        "cummin",
    ): "peer: result[0]: keys: want ['a', 'b', 'c', 'n'], got ['a', 'b', 'c', 'n', 'u']",
    (
        "td_values",
        "cummin",
    ): "peer: result[0]: keys: want ['a', 'b', 'c', 'n'], got ['a', 'b', 'c', 'label', 'n']",
    ("typed", "cummin"): "peer: result[0].class: want 'TensorDict', got 'Typed'",
    ("consolidated", "densify"): "peer: result.is_locked: want True, got False",
    ("h5", "densify"): "peer: result.class: want 'PersistentTensorDict', got 'TensorDict'",
    ("memmapped", "densify"): "peer: result.is_locked: want True, got False",
    ("params", "densify"): "peer: result.class: want 'TensorDictParams', got 'TensorDict'",
    (
        "archive_tdz",
        "detach_",
    ): "dense: ran; tclass raised RuntimeError: Can't detach views in-place. Use detach() instead. I...",
    (
        "lazy_dim0",
        "detach_",
    ): "dense: ran; tclass raised RuntimeError: Can't detach views in-place. Use detach() instead. I...",
    (
        "lazy_dim1",
        "detach_",
    ): "dense: ran; tclass raised RuntimeError: Can't detach views in-place. Use detach() instead. I...",
    (
        "lazy_nested",
        "detach_",
    ): "dense: ran; tclass raised RuntimeError: Can't detach views in-place. Use detach() instead. I...",
    (
        "memmap_loaded",
        "detach_",
    ): "dense: ran; tclass raised RuntimeError: Can't detach views in-place. Use detach() instead. I...",
    (
        "memmapped",
        "detach_",
    ): "dense: ran; tclass raised RuntimeError: Can't detach views in-place. Use detach() instead. I...",
    (
        "permuted",
        "detach_",
    ): "dense: ran; tclass raised RuntimeError: Can't detach views in-place. Use detach() instead. I...",
    (
        "squeezed",
        "detach_",
    ): "dense: ran; tclass raised RuntimeError: Can't detach views in-place. Use detach() instead. I...",
    (
        "td_unbatched",
        "detach_",
    ): "peer: ran; tclass raised RuntimeError: Can't detach views in-place. Use detach() instead. If...",
    (
        "view",
        "detach_",
    ): "dense: ran; tclass raised RuntimeError: Can't detach views in-place. Use detach() instead. I...",
    (
        "params",
        "div_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "memmap_loaded",
        "dumps",
    ): "dense: ran; tclass raised FileConflictError: the tensor for 'a.memmap' is already saved in <...",
    ("typed", "dumps"): "peer: result.class: want 'Typed', got 'TensorDict'",
    ("memmap_loaded", "entry_class"): "dense: result: want 'Tensor', got 'MemoryMappedTensor'",
    ("memmapped", "entry_class"): "dense: result: want 'Tensor', got 'MemoryMappedTensor'",
    ("params", "entry_class"): "dense: result: want 'Tensor', got 'Parameter'",
    (
        "params",
        "erf_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "erfc_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "h5",
        "exclude",
    ): "dense: ran; tclass raised AttributeError: 'PersistentTensorDict' object has no attribute 'ex...",
    (
        "params",
        "exp_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "rec_values",
        "expand",
    ): "peer: result['label']: want ('seq', [('seq', [('seq', [('py', 'hello'), ('py', 'hello'), ('p...",
    (
        "td_values",
        "expand",
    ): "peer: result['label']: want ('seq', [('seq', [('seq', [('py', 'hello'), ('py', 'hello'), ('p...",
    (
        "rec_values",
        "expand_as",
    ): "peer: result['label']: want ('seq', [('seq', [('seq', [('py', 'hello'), ('py', 'hello'), ('p...",
    (
        "td_values",
        "expand_as",
    ): "peer: result['label']: want ('seq', [('seq', [('seq', [('py', 'hello'), ('py', 'hello'), ('p...",
    (
        "params",
        "expm1_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "lazy_ragged",
        "filter_empty_",
    ): "peer: ran; tclass raised HeterogeneousEntryError: entry 'r' has shape [4, 2] in member 1 but...",
    (
        "params",
        "floor_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "frac_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("consolidated", "is_consolidated"): "dense: result: want False, got True",
    (
        "h5",
        "is_consolidated",
    ): "dense: ran; tclass raised AttributeError: 'PersistentTensorDict' object has no attribute '_c...",
    (
        "params",
        "is_consolidated",
    ): "dense: ran; tclass raised AttributeError: 'TensorDictParams' object has no attribute '_conso...",
    ("h5", "is_contiguous"): "peer: result: want False, got True",
    ("lazy_dim0", "is_contiguous"): "peer: result: want False, got True",
    ("lazy_dim1", "is_contiguous"): "peer: result: want False, got True",
    ("lazy_nested", "is_contiguous"): "peer: result: want False, got True",
    (
        "lazy_ragged",
        "is_contiguous",
    ): "peer: ran; tclass raised HeterogeneousEntryError: entry 'r' has shape [4, 2] in member 1 but...",
    ("permuted", "is_contiguous"): "dense: result: want True, got False",
    ("memmap_loaded", "is_memmap"): "dense: result: want False, got True",
    ("memmapped", "is_memmap"): "dense: result: want False, got True",
    ("archive_tdz", "is_shared"): "dense: result: want False, got True",
    (
        "lazy_ragged",
        "is_shared",
    ): "peer: ran; tclass raised HeterogeneousEntryError: entry 'r' has shape [4, 2] in member 1 but...",
    ("memmap_loaded", "is_shared"): "dense: result: want False, got True",
    ("memmapped", "is_shared"): "dense: result: want False, got True",
    (
        "params",
        "lgamma_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "h5",
        "load_",
    ): "dense: ran; tclass raised UnsupportedError: cannot walk a PersistentTensorDict",
    (
        "memmap_loaded",
        "load_",
    ): "dense: ran; tclass raised FileConflictError: the tensor for 'a.memmap' is already saved in <...",
    (
        "rec_autocast",
        "load_",
    ): "dense: ran; tclass raised ClassResolutionError: <tmp> holds a conformance.kinds.tclass_Autoc...",
    (
        "rec_flat",
        "load_",
    ): "dense: ran; tclass raised ClassResolutionError: <tmp> holds a conformance.kinds.tclass_Flat,...",
    (
        "rec_nested",
        "load_",
    ): "dense: ran; tclass raised ClassResolutionError: <tmp> holds a conformance.kinds.tclass_Neste...",
    (
        "rec_nocast",
        "load_",
    ): "dense: ran; tclass raised ClassResolutionError: <tmp> holds a conformance.kinds.tclass_Nocas...",
    (
        "rec_tc_flat",
        "load_",
    ): "dense: ran; tclass raised ClassResolutionError: <tmp> holds a conformance.kinds.tclass_FlatT...",
    (
        "rec_tensor_only",
        "load_",
    ): "dense: ran; tclass raised ClassResolutionError: <tmp> holds a conformance.kinds.tclass_Tenso...",
    (
        "rec_values",
        "load_",
    ): "dense: ran; tclass raised ClassResolutionError: <tmp> holds a conformance.kinds.tclass_Value...",
    (
        "h5",
        "load_memmap_",
    ): "dense: ran; tclass raised UnsupportedError: cannot walk a PersistentTensorDict",
    (
        "memmap_loaded",
        "load_memmap_",
    ): "dense: ran; tclass raised FileConflictError: the tensor for 'a.memmap' is already saved in <...",
    (
        "rec_autocast",
        "load_memmap_",
    ): "dense: ran; tclass raised ClassResolutionError: <tmp> holds a conformance.kinds.tclass_Autoc...",
    (
        "rec_flat",
        "load_memmap_",
    ): "dense: ran; tclass raised ClassResolutionError: <tmp> holds a conformance.kinds.tclass_Flat,...",
    (
        "rec_nested",
        "load_memmap_",
    ): "dense: ran; tclass raised ClassResolutionError: <tmp> holds a conformance.kinds.tclass_Neste...",
    (
        "rec_nocast",
        "load_memmap_",
    ): "dense: ran; tclass raised ClassResolutionError: <tmp> holds a conformance.kinds.tclass_Nocas...",
    (
        "rec_tc_flat",
        "load_memmap_",
    ): "dense: ran; tclass raised ClassResolutionError: <tmp> holds a conformance.kinds.tclass_FlatT...",
    (
        "rec_tensor_only",
        "load_memmap_",
    ): "dense: ran; tclass raised ClassResolutionError: <tmp> holds a conformance.kinds.tclass_Tenso...",
    (
        "rec_values",
        "load_memmap_",
    ): "dense: ran; tclass raised ClassResolutionError: <tmp> holds a conformance.kinds.tclass_Value...",
    (
        "params",
        "log10_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "log1p_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "log2_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "log_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "lazy_dim0",
        "logsumexp",
    ): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "lazy_nested",
        "logsumexp",
    ): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "td_unbatched",
        "logsumexp",
    ): "peer: result['u']: want tensor torch.float32 [2, 3], got tensor torch.float32 [2]",
    ("memmap_loaded", "make_memmap"): "dense: raised NotSavedError; tclass ran",
    ("memmapped", "make_memmap"): "dense: raised NotSavedError; tclass ran",
    ("memmap_loaded", "make_memmap_from_storage"): "dense: raised NotSavedError; tclass ran",
    ("memmapped", "make_memmap_from_storage"): "dense: raised NotSavedError; tclass ran",
    ("memmap_loaded", "make_memmap_from_tensor"): "dense: raised NotSavedError; tclass ran",
    ("memmapped", "make_memmap_from_tensor"): "dense: raised NotSavedError; tclass ran",
    (
        "params",
        "masked_fill_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("h5", "masked_select"): "peer: result['n'].class: want '_SubTensorDict', got 'TensorDict'",
    (
        "lazy_dim0",
        "masked_select",
    ): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "lazy_dim1",
        "masked_select",
    ): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "lazy_nested",
        "masked_select",
    ): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("lazy_dim1", "max"): "peer: result[0].class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("rec_nested", "max"): "peer: result[0]['n'].class: want 'TensorDict', got 'Inner'",
    (
        "rec_values",
        "max",
    ): "peer: result[0]: keys: want ['a', 'b', 'c'], got ['a', 'b', 'c', 'label']",
    (
        "td_metadata",
        "max",
    ): "peer: result[0]: keys: want ['a', 'b', 'c', 'n'], got ['a', 'b', 'c', 'meta', 'n']",
    (
        "td_unbatched",
        "max",
    ): "peer: result[0]: keys: want ['a', 'b', 'c', 'n'], got ['a', 'b', 'c', 'n', 'u']",
    (
        "td_values",
        "max",
    ): "peer: result[0]: keys: want ['a', 'b', 'c', 'n'], got ['a', 'b', 'c', 'label', 'n']",
    ("typed", "max"): "peer: result[0].class: want 'TensorDict', got 'Typed'",
    (
        "params",
        "maximum_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("lazy_dim0", "mean"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("lazy_nested", "mean"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "td_unbatched",
        "mean",
    ): "peer: result['u']: want tensor torch.float32 [2, 3], got tensor torch.float32 [2]",
    ("typed", "mean"): "peer: result.class: want 'TensorDict', got 'Typed'",
    ("typed", "memmap"): "peer: result.class: want 'Typed', got 'TensorDict'",
    ("typed", "memmap_like"): "peer: result.class: want 'Typed', got 'TensorDict'",
    ("memmap_loaded", "memmap_refresh_"): "dense: raised NotSavedError; tclass ran",
    ("memmapped", "memmap_refresh_"): "dense: raised NotSavedError; tclass ran",
    ("lazy_dim1", "min"): "peer: result[0].class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("rec_nested", "min"): "peer: result[0]['n'].class: want 'TensorDict', got 'Inner'",
    (
        "rec_values",
        "min",
    ): "peer: result[0]: keys: want ['a', 'b', 'c'], got ['a', 'b', 'c', 'label']",
    (
        "td_metadata",
        "min",
    ): "peer: result[0]: keys: want ['a', 'b', 'c', 'n'], got ['a', 'b', 'c', 'meta', 'n']",
    (
        "td_unbatched",
        "min",
    ): "peer: result[0]: keys: want ['a', 'b', 'c', 'n'], got ['a', 'b', 'c', 'n', 'u']",
    (
        "td_values",
        "min",
    ): "peer: result[0]: keys: want ['a', 'b', 'c', 'n'], got ['a', 'b', 'c', 'label', 'n']",
    ("typed", "min"): "peer: result[0].class: want 'TensorDict', got 'Typed'",
    (
        "params",
        "minimum_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "mul_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "h5",
        "names",
    ): "dense: ran; tclass raised AttributeError: 'PersistentTensorDict' object has no attribute 'na...",
    (
        "params",
        "nan_to_num_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("lazy_dim0", "nanmean"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "lazy_nested",
        "nanmean",
    ): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "td_unbatched",
        "nanmean",
    ): "peer: result['u']: want tensor torch.float32 [2, 3], got tensor torch.float32 [2]",
    ("typed", "nanmean"): "peer: result.class: want 'TensorDict', got 'Typed'",
    ("lazy_dim0", "nansum"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("lazy_nested", "nansum"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "td_unbatched",
        "nansum",
    ): "peer: result['u']: want tensor torch.float32 [2, 3], got tensor torch.float32 [2]",
    ("typed", "nansum"): "peer: result.class: want 'TensorDict', got 'Typed'",
    (
        "params",
        "neg_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("batch_reset", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("consolidated", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("h5", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("lazy_dim0", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("lazy_dim1", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("lazy_nested", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("params", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("permuted", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("rec_autocast", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("rec_flat", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("rec_frozen", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("rec_nested", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("rec_nocast", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("rec_tc_flat", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("rec_tensor_only", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("rec_values", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("squeezed", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("td_flat", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("td_metadata", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("td_names", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("td_nested", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("td_unbatched", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("td_values", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("typed", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("unsqueezed", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    ("view", "new_tensor"): "peer: result.device: want 'cpu', got 'None'",
    (
        "td_values",
        "non_tensor_items",
    ): "peer: result[0][0]: want ('seq', [('py', 'n'), ('py', 'tag')]), got ('py', 'label')",
    (
        "td_unbatched",
        "norm",
    ): "peer: result['u']: want tensor torch.float32 [2, 3], got tensor torch.float32 []",
    (
        "params",
        "numpy",
    ): "dense: ran; tclass raised RuntimeError: Can't call numpy() on Tensor that requires grad. Use...",
    (
        "rec_values",
        "pad",
    ): "peer: result['label']: want ('seq', [('seq', [('py', None), ('py', 'hello'), ('py', 'hello')...",
    (
        "td_metadata",
        "pad",
    ): "peer: result['meta']: want ('seq', [('seq', [('py', None), ('py', 'config'), ('py', 'config'...",
    (
        "td_values",
        "pad",
    ): "peer: result['label']: want ('seq', [('seq', [('py', None), ('py', 'hello'), ('py', 'hello')...",
    ("typed", "pad"): "peer: result.class: want 'TensorDict', got 'Typed'",
    ("h5", "popitem"): "peer: result[1].class: want 'PersistentTensorDict', got 'TensorDict'",
    (
        "params",
        "pow_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("lazy_dim0", "prod"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("lazy_nested", "prod"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "td_unbatched",
        "prod",
    ): "peer: result['u']: want tensor torch.float32 [2, 3], got tensor torch.float32 [2]",
    ("typed", "prod"): "peer: result.class: want 'TensorDict', got 'Typed'",
    ("lazy_dim0", "quantile"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "lazy_nested",
        "quantile",
    ): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "td_unbatched",
        "quantile",
    ): "peer: result['u']: want tensor torch.float32 [2, 3], got tensor torch.float32 [2]",
    ("typed", "quantile"): "peer: result.class: want 'TensorDict', got 'Typed'",
    (
        "params",
        "reciprocal_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("params", "rename"): "dense: after['n'].names: want (None, None), got ('p', 'q')",
    (
        "rec_autocast",
        "rename_key_",
    ): "dense: ran; tclass raised UnknownFieldError: Autocast has no field 'c2' (fields: a, b, c); d...",
    (
        "rec_flat",
        "rename_key_",
    ): "dense: ran; tclass raised UnknownFieldError: Flat has no field 'c2' (fields: a, b, c); did y...",
    (
        "rec_nested",
        "rename_key_",
    ): "dense: ran; tclass raised UnknownFieldError: Nested has no field 'c2' (fields: a, b, c, n); ...",
    (
        "rec_nocast",
        "rename_key_",
    ): "dense: ran; tclass raised UnknownFieldError: Nocast has no field 'c2' (fields: a, b, c); did...",
    (
        "rec_tc_flat",
        "rename_key_",
    ): "dense: ran; tclass raised UnknownFieldError: FlatTC has no field 'c2' (fields: a, b, c); did...",
    (
        "rec_tensor_only",
        "rename_key_",
    ): "dense: ran; tclass raised UnknownFieldError: TensorOnly has no field 'c2' (fields: a, b, c);...",
    (
        "rec_values",
        "rename_key_",
    ): "dense: ran; tclass raised UnknownFieldError: Valued has no field 'c2' (fields: a, b, c, labe...",
    (
        "h5",
        "rename_keys",
    ): "dense: after: keys: want ['a', 'b', 'c', 'n'], got ['a', 'b', 'c2', 'n']",
    ("params", "rename_keys"): "peer: result.class: want 'TensorDict', got 'TensorDictParams'",
    (
        "rec_frozen",
        "rename_keys",
    ): "dense: ran; tclass raised LockedError: cannot remove 'c' from a locked TensorDict. Unlock it...",
    ("h5", "replace"): "dense: after['a']: values differ",
    ("params", "requires_grad"): "dense: result: want False, got True",
    (
        "lazy_ragged",
        "requires_grad_",
    ): "peer: ran; tclass raised HeterogeneousEntryError: entry 'r' has shape [4, 2] in member 1 but...",
    (
        "params",
        "round_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "rsqrt_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("typed", "save"): "peer: result.class: want 'Typed', got 'TensorDict'",
    ("memmap_loaded", "saved_path"): "dense: raised NotSavedError; tclass ran",
    ("memmapped", "saved_path"): "dense: raised NotSavedError; tclass ran",
    (
        "h5",
        "select",
    ): "dense: ran; tclass raised AttributeError: 'PersistentTensorDict' object has no attribute 'se...",
    (
        "h5",
        "separates",
    ): "dense: ran; tclass raised AttributeError: 'PersistentTensorDict' object has no attribute 'se...",
    (
        "rec_frozen",
        "set",
    ): "dense: error: want RuntimeError, got FrozenInstanceError: cannot assign to field 'a': Frozen...",
    ("view", "set"): "view: AssertionError: Tensor-likes are not close!",
    ("h5", "set_at_"): "dense: result['a']: values differ",
    (
        "lazy_dim0",
        "set_non_tensor",
    ): "dense: ran; tclass raised BatchMismatchError: batch dimension mismatch for key 'word': its s...",
    (
        "lazy_dim1",
        "set_non_tensor",
    ): "dense: ran; tclass raised BatchMismatchError: batch dimension mismatch for key 'word': its s...",
    (
        "lazy_nested",
        "set_non_tensor",
    ): "dense: ran; tclass raised BatchMismatchError: batch dimension mismatch for key 'word': its s...",
    (
        "lazy_ragged",
        "set_non_tensor",
    ): "peer: ran; tclass raised BatchMismatchError: batch dimension mismatch for key 'word': its sh...",
    (
        "rec_autocast",
        "set_non_tensor",
    ): "dense: ran; tclass raised UnknownFieldError: Autocast has no field 'word' (fields: a, b, c)",
    (
        "rec_flat",
        "set_non_tensor",
    ): "dense: ran; tclass raised UnknownFieldError: Flat has no field 'word' (fields: a, b, c)",
    (
        "rec_frozen",
        "set_non_tensor",
    ): "dense: error: want RuntimeError, got UnknownFieldError: Frozen has no field 'word' (fields: ...",
    (
        "rec_nested",
        "set_non_tensor",
    ): "dense: ran; tclass raised UnknownFieldError: Nested has no field 'word' (fields: a, b, c, n)",
    (
        "rec_nocast",
        "set_non_tensor",
    ): "dense: ran; tclass raised UnknownFieldError: Nocast has no field 'word' (fields: a, b, c)",
    (
        "rec_tc_flat",
        "set_non_tensor",
    ): "dense: ran; tclass raised UnknownFieldError: FlatTC has no field 'word' (fields: a, b, c)",
    (
        "rec_tensor_only",
        "set_non_tensor",
    ): "dense: ran; tclass raised UnknownFieldError: TensorOnly has no field 'word' (fields: a, b, c)",
    (
        "rec_values",
        "set_non_tensor",
    ): "dense: ran; tclass raised UnknownFieldError: Valued has no field 'word' (fields: a, b, c, la...",
    (
        "rec_autocast",
        "setdefault",
    ): "dense: ran; tclass raised UnknownFieldError: Autocast has no field 'z' (fields: a, b, c)",
    (
        "rec_flat",
        "setdefault",
    ): "dense: ran; tclass raised UnknownFieldError: Flat has no field 'z' (fields: a, b, c)",
    (
        "rec_frozen",
        "setdefault",
    ): "dense: error: want RuntimeError, got UnknownFieldError: Frozen has no field 'z' (fields: a, ...",
    (
        "rec_nested",
        "setdefault",
    ): "dense: ran; tclass raised UnknownFieldError: Nested has no field 'z' (fields: a, b, c, n)",
    (
        "rec_nocast",
        "setdefault",
    ): "dense: ran; tclass raised UnknownFieldError: Nocast has no field 'z' (fields: a, b, c)",
    (
        "rec_tc_flat",
        "setdefault",
    ): "dense: ran; tclass raised UnknownFieldError: FlatTC has no field 'z' (fields: a, b, c)",
    (
        "rec_tensor_only",
        "setdefault",
    ): "dense: ran; tclass raised UnknownFieldError: TensorOnly has no field 'z' (fields: a, b, c)",
    (
        "rec_values",
        "setdefault",
    ): "dense: ran; tclass raised UnknownFieldError: Valued has no field 'z' (fields: a, b, c, label)",
    (
        "lazy_ragged",
        "share_memory_",
    ): "peer: ran; tclass raised HeterogeneousEntryError: entry 'r' has shape [4, 2] in member 1 but...",
    ("params", "share_memory_"): "peer: result.is_locked: want False, got True",
    (
        "params",
        "sigmoid_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "sign_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "sin_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "sinh_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("lazy_dim1", "softmax"): "peer: result.class: want 'LazyStackedTensorDict', got 'TensorDict'",
    ("consolidated", "split_keys"): "peer: result[2]['n'].is_locked: want False, got True",
    (
        "h5",
        "split_keys",
    ): "dense: ran; tclass raised AttributeError: 'PersistentTensorDict' object has no attribute 'se...",
    (
        "lazy_ragged",
        "split_keys",
    ): "peer: ran; tclass raised HeterogeneousEntryError: entry 'r' has shape [4, 2] in member 1 but...",
    ("memmapped", "split_keys"): "peer: result[2]['n'].is_locked: want False, got True",
    ("params", "split_keys"): "peer: result[2].class: want 'TensorDictParams', got 'TensorDict'",
    (
        "rec_frozen",
        "split_keys",
    ): "dense: ran; tclass raised FrozenInstanceError: cannot assign to field 'a': Frozen is frozen ...",
    (
        "params",
        "sqrt_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "h5",
        "stack_from_tensordict",
    ): "dense: ran; tclass raised AttributeError: 'PersistentTensorDict' object has no attribute 'se...",
    (
        "h5",
        "stack_tensors",
    ): "dense: ran; tclass raised AttributeError: 'PersistentTensorDict' object has no attribute 'ex...",
    (
        "rec_autocast",
        "stack_tensors",
    ): "dense: ran; tclass raised UnknownFieldError: Autocast has no field 'bc' (fields: a, b, c); d...",
    (
        "rec_flat",
        "stack_tensors",
    ): "dense: ran; tclass raised UnknownFieldError: Flat has no field 'bc' (fields: a, b, c); did y...",
    (
        "rec_frozen",
        "stack_tensors",
    ): "dense: error: want RuntimeError, got UnknownFieldError: Frozen has no field 'bc' (fields: a,...",
    (
        "rec_nested",
        "stack_tensors",
    ): "dense: ran; tclass raised UnknownFieldError: Nested has no field 'bc' (fields: a, b, c, n); ...",
    (
        "rec_nocast",
        "stack_tensors",
    ): "dense: ran; tclass raised UnknownFieldError: Nocast has no field 'bc' (fields: a, b, c); did...",
    (
        "rec_tc_flat",
        "stack_tensors",
    ): "dense: ran; tclass raised UnknownFieldError: FlatTC has no field 'bc' (fields: a, b, c); did...",
    (
        "rec_tensor_only",
        "stack_tensors",
    ): "dense: ran; tclass raised UnknownFieldError: TensorOnly has no field 'bc' (fields: a, b, c);...",
    (
        "rec_values",
        "stack_tensors",
    ): "dense: ran; tclass raised UnknownFieldError: Valued has no field 'bc' (fields: a, b, c, labe...",
    ("lazy_dim0", "std"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("lazy_nested", "std"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "td_unbatched",
        "std",
    ): "peer: result['u']: want tensor torch.float32 [2, 3], got tensor torch.float32 [2]",
    ("typed", "std"): "peer: result.class: want 'TensorDict', got 'Typed'",
    (
        "params",
        "sub_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("lazy_dim0", "sum"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("lazy_nested", "sum"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "td_unbatched",
        "sum",
    ): "peer: result['u']: want tensor torch.float32 [2, 3], got tensor torch.float32 [2]",
    ("typed", "sum"): "peer: result.class: want 'TensorDict', got 'Typed'",
    (
        "params",
        "tan_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    (
        "params",
        "tanh_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("consolidated", "tensor_split"): "peer: result[0].is_locked: want True, got False",
    ("memmapped", "tensor_split"): "dense: result[0].is_locked: want False, got True",
    ("rec_values", "to_h5"): "peer: result['label']: want b'hello', got 'hello'",
    ("td_metadata", "to_h5"): "peer: result['meta']: want b'config', got 'config'",
    ("td_names", "to_h5"): "peer: result.names: want ('x', 'y'), got (None, None)",
    ("td_values", "to_h5"): "peer: result['label']: want b'hello', got 'hello'",
    ("memmapped", "to_lazystack"): "dense: result.is_locked: want False, got True",
    (
        "lazy_dim0",
        "to_module",
    ): "dense: error: want KeyError, got UnsupportedError: to_module on a lazy stack is not supporte...",
    (
        "lazy_dim1",
        "to_module",
    ): "dense: error: want KeyError, got UnsupportedError: to_module on a lazy stack is not supporte...",
    (
        "lazy_nested",
        "to_module",
    ): "dense: error: want KeyError, got UnsupportedError: to_module on a lazy stack is not supporte...",
    ("consolidated", "to_padded_tensor"): "peer: result.is_locked: want False, got True",
    (
        "lazy_ragged",
        "to_padded_tensor",
    ): "peer: ran; tclass raised HeterogeneousEntryError: entry 'r' has shape [4, 2] in member 1 but...",
    ("memmapped", "to_padded_tensor"): "peer: result.is_locked: want False, got True",
    (
        "params",
        "trunc_",
    ): "dense: ran; tclass raised RuntimeError: a leaf Variable that requires grad is being used in ...",
    ("memmapped", "unbind"): "dense: result[0].is_locked: want False, got True",
    (
        "rec_values",
        "unsqueeze",
    ): "peer: result['label']: want ('seq', [('seq', [('seq', [('py', 'hello'), ('py', 'hello'), ('p...",
    (
        "td_values",
        "unsqueeze",
    ): "peer: result['label']: want ('seq', [('seq', [('seq', [('py', 'hello'), ('py', 'hello'), ('p...",
    (
        "rec_frozen",
        "update",
    ): "dense: error: want RuntimeError, got FrozenInstanceError: cannot assign to field 'a': Frozen...",
    ("h5", "update_at_"): "dense: result['a']: values differ",
    (
        "td_unbatched",
        "update_at_",
    ): "peer: ran; tclass raised RuntimeError: expand(torch.FloatTensor{[2, 3]}, size=[3]): the numb...",
    ("lazy_dim0", "var"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    ("lazy_nested", "var"): "peer: result.class: want 'TensorDict', got 'LazyStackedTensorDict'",
    (
        "td_unbatched",
        "var",
    ): "peer: result['u']: want tensor torch.float32 [2, 3], got tensor torch.float32 [2]",
    ("typed", "var"): "peer: result.class: want 'TensorDict', got 'Typed'",
    (
        "permuted",
        "view",
    ): "dense: ran; tclass raised RuntimeError: view size is not compatible with input tensor's size...",
}

RECORDS = (
    "rec_flat", "rec_tc_flat", "rec_nested", "rec_values", "rec_autocast", "rec_nocast",
    "rec_tensor_only", "rec_frozen",
)  # fmt: skip

PEER_DIFFERS: dict[str | tuple[str, str], str] = {
    **{
        (kind, "__contains__"): "the peer's records answer False for their own field names"
        for kind in RECORDS
    },
    **{
        (kind, "clear_refs_for_compile_"): "the peer's records return a TensorDict here"
        for kind in RECORDS
    },
}

DENSE_DIFFERS: dict[tuple[str, str], str] = {}
