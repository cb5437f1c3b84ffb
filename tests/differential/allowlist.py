"""The deliberate differences: findings that are not bugs.

Each entry cites the README bullet it comes from (``readme``: text that appears in
README.md's "Differences from tensordict", checked by the tests) and says which findings
it covers. Anything not covered here is a bug: fixed, or listed in ``OPEN`` (below) with
the reason it is not fixed yet, and reported as open by the runner.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .allow_aliases import (
    _grown_in_a_copy,
    _identity_unflatten_kept,
    _saved_over_a_loaded_folder,
)
from .allow_common import _any_of, _raised_by, _tagged
from .allow_entries import (
    _batch_past_unset_field,
    _dotted_keys_loaded,
    _h5_separated_removed,
    _list_values_loaded_whole,
    _locked_record_updated_at,
    _missing_separated_spans_its_node,
    _nested_lists_stacked_whole,
    _new_entry_copied,
    _params_value_attribute,
    _popped_as_stored,
    _restacked_by_member,
    _separated_from_value_node,
    _separated_once,
    _separates_default_left,
    _separates_kept_empty,
    _softmax_on_ragged,
    _split_parts_keep_nested_dims,
    _split_strict_on_lazy,
    _stack_of_values_not_empty,
    _written_into_no_elements,
    _written_node_kept,
)
from .allow_extra import (
    _loss_fails_on_empty_node,
    _loss_keeps_values,
    _merge_keeps_attrs,
    _merge_keeps_later_nodes,
    _merge_of_lazy_fails_inside,
    _merge_shares_no_empty_node,
    _merged_in_order_of_holders,
    _tensor_list_stacked,
)
from .allow_features import (
    _attrs_of_a_record,
    _attrs_shape_not_rows,
    _attrs_values_kept,
    _clone_copies_values,
    _consolidated_key_order,
    _consolidated_values_kept,
    _consolidation_kept_by_equal_values,
    _dict_cast_by_the_constructor,
    _dict_read_as_rows,
    _feature_fails_inside,
    _grad_spread_by_foreach,
    _joined_into_the_record,
    _list_read_as_rows,
    _list_read_into_str_field,
    _meta_kept_by_expand,
    _namedtuple_in_field_order,
    _record_values_kept_per_element,
    _replaced_values_not_nodes,
    _size_kept_a_size,
    _value_kept_in_str_field,
)
from .allow_fields import (
    _cast_to_the_field,
    _dict_kept_in_value_field,
    _empty_record_kept_in_math,
    _none_field_class_asked,
    _none_field_kept_by_apply,
    _none_field_listed,
    _none_field_not_written,
    _none_field_null_in_arrow,
    _none_field_set_read,
    _none_field_set_then_listed,
    _none_field_shape_asked,
    _none_field_unset,
    _not_json_refused,
    _record_written_at_none,
    _shape_field_kept,
    _value_fits_its_new_node,
    _values_through_apply,
)
from .allow_h5 import (
    _empty_stack_not_written,
    _group_without_batch_inferred,
    _h5_cast_as_torch,
    _h5_empty_group_auto_batched,
    _h5_keys_listed,
    _h5_masked_select_copies,
    _h5_memmap_saved_path,
    _h5_missing_renamed,
    _h5_params_missing_entry_class,
    _h5_params_read,
    _h5_peer_refuses,
    _h5_repeated_rows_written,
    _h5_result_kept,
    _h5_rows_not_moved,
    _h5_value_not_dropped,
    _h5_view_class_named,
    _ragged_batch_refused,
    _stack_read_per_element,
    _store_writes_grad_data,
)
from .allow_methods import (
    _cast_keeps_devices,
    _device_set_on_a_file_view,
    _devices_set_through_a_view,
    _first_row_none_read,
    _lazy_operand_not_cast_first,
    _mapped_files_shared,
    _method_fails_inside,
    _nested_lists_not_read_as_pairs,
    _state_dict_fails_inside,
    _struct_array_list_read_back,
    _struct_array_values_read_back,
)
from .allow_names import (
    _broadcast_index_unnamed,
    _broadcast_unnamed,
    _empty_lazy_unflatten_named,
    _empty_nested_resized,
    _lazy_flatten_names_kept,
    _masked_select_unnamed,
    _names_unique,
    _pad_keeps_names,
    _pad_sequence_unnamed,
    _padded_value_names_mismatch,
    _stack_dim_name_kept,
    _value_node_names_unread,
)
from .allow_new import (
    _NEW_LIKE,
    _lazy_names_reach_nested,
    _lazy_new_batch_named,
    _names_fit_the_batch,
)
from .allow_ops import (
    _MAPPED_THERE,
    _REDUCTIONS,
    _VALUES_DROPPED,
    _beyond_the_peer,
    _broadcast_as_torch,
    _changed_in_place_later,
    _empty_gives_new_nodes,
    _in_place_all_or_nothing,
    _intersection_without_tensors,
    _kept_in_place,
    _memory_mapped_as_indexed,
    _names_read_live,
    _nested_batch_dims_kept,
    _new_entries_saved,
    _peer_fails_inside,
    _reflected_on_ragged,
    _saved_later,
    _tensor_on_ragged,
    _tensor_spread_on_ragged,
    _through_a_value,
    _torch_dtypes,
    _values_kept,
    _values_not_merged,
    _written_back,
)
from .allow_params import (
    _grad_leaves_loaded,
    _params_as_modules,
    _params_from_modules_fail_inside,
    _params_stack_value_dropped,
)
from .allow_ragged import (
    _pad_dim_ragged_refused,
    _padded_slots_per_element,
    _padded_values,
    _ragged_values_not_listed,
)
from .allow_records import (
    _consolidated_keeps_devices,
    _consolidated_on_cpu,
    _contains_a_field,
    _exclusive_keys_refused,
    _from_dict_batch_dims,
    _frozen_locked,
    _inferred_past_empty_dicts,
    _kept_as_annotated,
    _key_below_a_value,
    _missing_key_first,
    _mixed_field_refused,
    _mixed_keys_unsorted,
    _namedtuple_number_kept,
    _namedtuple_of_record,
    _nested_record_written_in_place,
    _nested_records_kept,
    _params_nested_read_locked,
    _params_saved,
    _ragged_lists_loaded,
    _records_restacked,
    _refiled_not_written,
    _saved_empty_lists_kept,
    _shared_on_files,
    _state_dict_values_kept,
    _tolist_lists_fields,
    _value_field_not_a_leaf,
)
from .allow_replaced import _replaced_fields_first
from .allow_saved import (
    _empty_tensors_have_no_file,
    _memmap_by_data,
)
from .allow_structure import (
    _compared_through_lazy_node,
    _contains_as_dense,
    _copy_unlocked,
    _flattened_without_dims,
    _lazy_batch_size_set,
    _lazy_data_ptr_per_member,
    _lazy_load_reads_stacked,
    _lazy_uint_refused_per_member,
    _lock_follows_sharing,
    _members_lock_as_the_stack,
    _moved_nodes_keep_their_lock,
    _narrowed_stack_contiguous,
    _no_members_taken,
    _partial_key_not_defaulted,
    _records_kept,
    _regrouped_by_view,
    _stays_lazy,
    _write_into_locked_slices,
    _written_through_expanded_view,
)
from .allow_values import (
    _empty_values_cut_short,
    _empty_values_kept,
    _empty_values_rebuilt,
    _empty_values_shaped,
    _first_row_none_kept,
    _loaded_is_memmap,
    _memmap_lock_beside_empty_values,
    _nested_names_kept,
    _nothing_mapped,
    _ragged_dim,
    _ragged_made_dense,
    _ragged_pad_kept,
    _ragged_split_by_member,
    _ragged_values_loaded,
    _ragged_values_unread,
    _refreshed_values_as_loaded,
    _shaped_as_torch,
    _shared_str_kept,
    _shared_value_as_one,
    _stack_of_no_elements_kept,
    _stacked_past_apply_drop,
    _state_dict_keys_skipped,
    _value_stack_reshaped_in_place,
    _values_shaped_as_torch,
    _values_squeezed_as_the_batch,
)
from .allow_writes import (
    _absent_field_filled,
    _beyond_the_index,
    _checked_as_torch,
    _dims_in_batch,
    _empty_set_under_node,
    _equal_value_rewritten,
    _member_rows_written_per_element,
    _metadata_rows_written,
    _number_into_keys_some_members_hold,
    _number_written_around_values,
    _reshaped_past_a_ragged_dim,
    _row_dict_of_one_list,
    _setitem_fails_inside,
    _shared_list_written_empty,
    _shared_value_written_at,
    _stacked_value_stacks_copied,
    _stacked_values_copied,
    _too_many_indices,
    _value_kept_over_no_write,
    _value_spans_member_nodes,
    _values_written_in_place,
    _values_written_through_a_permute,
    _written_as_torch,
)
from .open_findings import OPEN

if TYPE_CHECKING:
    from .engine import Finding, Outcome
    from .world import Facts


def _selected_as_indexed(finding: Finding, facts: Facts, peer: Outcome, mine: Outcome) -> bool:
    """``masked_select`` is ``x[mask]``: of a memory-mapped entry, with no element
    selected, a plain tensor (``_memory_mapped_as_indexed``)."""
    if finding.kind != "result" or finding.step.op != "masked_select":
        return False
    return all(
        (found := _MAPPED_THERE.search(line)) is not None and re.search(r"\b0\b", found.group(1))
        for line in finding.detail
    )


def _names_through_saved_nested(
    finding: Finding, facts: Facts, peer: Outcome, mine: Outcome
) -> bool:
    """``named_apply(fn, names=...)`` of a memory-mapped collection with a nested one of
    more batch dims: the peer fails giving the nested one the names (it names it as it
    does in memory, the names and ``None`` for the extra dims, as tclass does); and
    ``apply(fn, names=...)`` of a named collection holding a nested one, whose new names
    the peer refines over the nested result's old ones and fails ("cannot coerce")."""
    if finding.kind != "peer-raises" or finding.step.op not in ("named_apply", "apply"):
        return False
    message = str(peer.error)
    if "refine_names: cannot coerce TensorDict names" in message:
        return "names=" in finding.step.src
    return "the length of the dimension names must equate" in message


def _h5_set_returns_self(finding: Finding, facts: Facts, peer: Outcome, mine: Outcome) -> bool:
    """``file.set_(("m", "c"), v)`` and ``file.set(("m", "c"), v)``: tclass returns the
    file, as ``set`` / ``set_`` return the collection they were called on, where the
    peer's file returns the nested group; also of a file an earlier step made
    (``PersistentTensorDict.from_dict``, ``to_h5``), where the group's batch size and
    names differ too (program 15,966,963 L8 of methods,features,entries,records, fz29b);
    ``stack_tensors`` / ``cat_tensors`` with a nested ``out_key``, which the peer's file
    writes through that ``set`` and returns (program 15,954,932 L12, fz30e)."""
    if finding.kind != "result":
        return False
    op, src = finding.step.op, finding.step.src
    if op in ("stack_tensors", "cat_tensors"):
        if "out_key=(" not in src:
            return False
    elif op not in ("set", "set_") or f"{op}((" not in src:
        return False
    if facts.h5 and finding.detail[0].startswith("result: keys:"):
        return True
    made = any(_MADE_FILE.search(line) for line in finding.lines[:-1])
    return made and all(line.startswith(_RETURNED_GROUP) for line in finding.detail)


_MADE_FILE = re.compile(r"PersistentTensorDict\.from_dict\(|\.to_h5\(|from_h5\(")
_RETURNED_GROUP = ("result: keys:", "result.batch_size:", "result.names:")


def _new_batch_named(finding: Finding, facts: Facts, peer: Outcome, mine: Outcome) -> bool:
    """``new_zeros`` / ``new_ones`` / ``new_full`` to a batch size of fewer dims: tclass
    names the new dims right-aligned (none for ``[]``), where the peer keeps all the old
    names, more names than its result has dims."""
    if finding.kind != "result" or finding.step.op not in ("new_zeros", "new_ones", "new_full"):
        return False
    if not all(".names: " in line for line in finding.detail):
        return False
    value = peer.value
    return hasattr(value, "names") and len(value.names) != value.batch_dims


@dataclass(frozen=True)
class Entry:
    name: str
    readme: str  # a phrase of the README bullet this difference comes from
    covers: Callable[[Finding, Facts, Outcome, Outcome], bool]


ENTRIES: list[Entry] = [
    Entry(
        "ragged-dim-unsupported",
        "Along the ragged dim of a lazy stack (a `-1` in its batch size), `unbind`,",
        _any_of(
            _ragged_dim,
            _ragged_pad_kept,
            _ragged_made_dense,
            _ragged_values_unread,
            _ragged_split_by_member,
            _pad_dim_ragged_refused,
            _ragged_values_not_listed,
        ),
    ),
    Entry(
        "ragged-values-keep-sizes",
        "**Ragged stacks of Python values keep their sizes.**",
        _ragged_values_loaded,
    ),
    Entry(
        "values-kept-shared",
        "**Python values in collections.**",
        _any_of(
            _number_written_around_values,
            _meta_kept_by_expand,
            _values_written_in_place,
            _values_kept(*_VALUES_DROPPED, *_NEW_LIKE),  # (new_full/ones/zeros: lazy stacks too)
            _through_a_value,
            _empty_values_shaped,
            _empty_values_kept,
            _empty_values_rebuilt,
            _empty_values_cut_short,
            _saved_empty_lists_kept,
            _stacked_values_copied,
            _values_written_through_a_permute,
            _stacked_value_stacks_copied,
            _empty_gives_new_nodes,
            _separated_from_value_node,
            _missing_separated_spans_its_node,
            _stack_of_values_not_empty,
            _new_entries_saved,
            _new_entry_copied,
            _saved_later,
            _key_below_a_value,
            _nested_lists_stacked_whole,
            _list_values_loaded_whole,
            _not_json_refused,
            _value_fits_its_new_node,
            _first_row_none_kept,
            _first_row_none_read,
            _equal_value_rewritten,
            _metadata_rows_written,
            _value_spans_member_nodes,
            _member_rows_written_per_element,
            _row_dict_of_one_list,
            _shared_str_kept,
            _shared_list_written_empty,
            _value_stack_reshaped_in_place,
            _attrs_values_kept,
            _clone_copies_values,
            _stack_of_no_elements_kept,
            _size_kept_a_size,
            _loss_keeps_values,
        ),
    ),
    Entry(
        "stacking-keeps",
        "**Stacking keeps what can be kept.**",
        _any_of(
            _padded_values,
            _no_members_taken,
            _lazy_batch_size_set,
            _stays_lazy,
            _merged_in_order_of_holders,
            _merge_keeps_later_nodes,
            _merge_keeps_attrs,
            _partial_key_not_defaulted,
            _lazy_uint_refused_per_member,
            _lazy_load_reads_stacked,
            _lazy_data_ptr_per_member,
            _narrowed_stack_contiguous,
            _written_through_expanded_view,
            _records_kept,
            _pad_sequence_unnamed,
            _pad_keeps_names,
            _contains_as_dense,
            _exclusive_keys_refused,
            _restacked_by_member,
            _regrouped_by_view,
            _records_restacked,
            _nested_records_kept,
            _written_node_kept,
            _number_into_keys_some_members_hold,
            _identity_unflatten_kept,
        ),
    ),
    Entry(
        "peer-fails-inside",
        "**Where the peer fails inside, tclass answers.**",
        _any_of(
            _peer_fails_inside,
            _setitem_fails_inside,
            _compared_through_lazy_node,
            _shared_value_written_at,
            _stacked_past_apply_drop,
            _mixed_field_refused,
            _separated_once,
            _separates_kept_empty,
            _separates_default_left,
            _h5_separated_removed,
            _split_parts_keep_nested_dims,
            _split_strict_on_lazy,
            _namedtuple_number_kept,
            _mixed_keys_unsorted,
            _names_through_saved_nested,
            _state_dict_values_kept,
            _dotted_keys_loaded,
            _locked_record_updated_at,
            _params_nested_read_locked,
            _params_stack_value_dropped,
            _params_from_modules_fail_inside,
            _popped_as_stored,
            _params_value_attribute,
            _ragged_lists_loaded,
            _padded_value_names_mismatch,
            _method_fails_inside,
            _state_dict_fails_inside,
            _merge_of_lazy_fails_inside,
            _loss_fails_on_empty_node,
            _feature_fails_inside,
            _list_read_as_rows,
            _dict_read_as_rows,
            _attrs_shape_not_rows,
            _struct_array_values_read_back,
            _struct_array_list_read_back,
            _nested_lists_not_read_as_pairs,
            _devices_set_through_a_view,
            _device_set_on_a_file_view,
            _empty_stack_not_written,
        ),
    ),
    Entry(
        "index-beyond-batch",
        "**Indexing stays in the batch dims.** An index with more entries than batch dims is an",
        _any_of(
            _tagged("beyond-batch", "tclass-raises", "family"),
            _dims_in_batch,
            _too_many_indices,
            _beyond_the_index,
            _memory_mapped_as_indexed,
            _selected_as_indexed,
            _record_written_at_none,
            _broadcast_as_torch,
        ),
    ),
    Entry(
        "checked-as-torch",
        "**Shapes, names and in-place writes are checked as torch checks a tensor.**",
        _any_of(
            _checked_as_torch,
            _written_as_torch,
            _reshaped_past_a_ragged_dim,
            _names_unique,
            _names_fit_the_batch,
            _lazy_names_reach_nested,
            _broadcast_index_unnamed,
            _masked_select_unnamed,
            _broadcast_unnamed,
            _value_node_names_unread,
            _lazy_flatten_names_kept,
            _empty_lazy_unflatten_named,
            _shaped_as_torch,
            _flattened_without_dims,
            _values_shaped_as_torch,
            _values_squeezed_as_the_batch,
            _refreshed_values_as_loaded,
            _nested_names_kept,
            _shared_value_as_one,
            _value_kept_over_no_write,
            _lazy_operand_not_cast_first,
            _names_read_live,
            _stack_dim_name_kept,
            _empty_set_under_node,
            _new_batch_named,
            _lazy_new_batch_named,
            _written_into_no_elements,
            _empty_nested_resized,
        ),
    ),
    Entry(
        "empty-tensors-have-no-file",
        "**A tensor with no elements has no file.**",
        _empty_tensors_have_no_file,
    ),
    Entry(
        "memmap-by-data",
        "**`is_memmap()` looks at the data.**",
        _any_of(
            _memmap_by_data,
            _memmap_lock_beside_empty_values,
            _mapped_files_shared,
            _loaded_is_memmap,
            _nothing_mapped,
            _consolidated_on_cpu,
            _consolidated_keeps_devices,
            _cast_keeps_devices,
            _refiled_not_written,
            _shared_on_files,
            _consolidated_key_order,
            _consolidated_values_kept,
            _consolidation_kept_by_equal_values,
            _saved_over_a_loaded_folder,  # (README 3, "Writes are crash-safe")
        ),
    ),
    Entry(
        "lock-follows-sharing",
        "**A result's lock follows what it shares, not a flag.**",
        _any_of(
            _lock_follows_sharing,
            _copy_unlocked,
            _members_lock_as_the_stack,
            _write_into_locked_slices,
            _moved_nodes_keep_their_lock,
            _merge_shares_no_empty_node,
        ),
    ),
    Entry(
        "annotation-casts",
        "5. **Casting follows the annotation** of tensorclass fields",
        _any_of(
            _raised_by("FieldTypeError"),
            _cast_to_the_field,
            _dict_kept_in_value_field,
            _kept_as_annotated,
            _dict_cast_by_the_constructor,
            _value_kept_in_str_field,
            _list_read_into_str_field,
        ),
    ),
    Entry(
        "records-predictable",
        "**Tensorclasses are predictable.**",
        _any_of(
            _from_dict_batch_dims,
            _tolist_lists_fields,
            _contains_a_field,
            _namedtuple_of_record,
            _inferred_past_empty_dicts,
            _grown_in_a_copy,
            _nested_record_written_in_place,
            _value_field_not_a_leaf,
            _attrs_of_a_record,
            _record_values_kept_per_element,
            _replaced_values_not_nodes,
            _joined_into_the_record,
            _replaced_fields_first,
            _shape_field_kept,
            _namedtuple_in_field_order,
            _empty_record_kept_in_math,
        ),
    ),
    Entry(
        "frozen-records-locked",
        "**Frozen records hash by identity.**",
        _frozen_locked,
    ),
    Entry(
        "absent-field-filled",
        "**An absent field of a saved record is filled while locked.**",
        _absent_field_filled,
    ),
    Entry(
        "padded-slots-read-per-element",
        "**A padded Python value reads alike in its new slots.**",
        _padded_slots_per_element,
    ),
    Entry(
        "none-field-unset",
        "**A field set to `None` is not set, at every level.**",
        _any_of(
            _none_field_unset,
            _none_field_listed,
            _none_field_not_written,
            _none_field_set_read,
            _none_field_set_then_listed,
            _none_field_shape_asked,
            _none_field_class_asked,
            _none_field_kept_by_apply,
            _none_field_null_in_arrow,
            _batch_past_unset_field,
        ),
    ),
    Entry(
        "apply-keeps-fitting-values",
        "**`apply(fn, batch_size=...)` keeps the Python values that fit.**",
        _values_through_apply,
    ),
    Entry(
        # (and ``load_state_dict`` into leaves that require grad: README "or any leaf that
        # requires grad (`requires_grad_()`) writes their data outside autograd", fz29g)
        "state-dict-as-nn-module",
        "and with `strict=False` skips keys only one side has, as `nn.Module`",
        _any_of(_state_dict_keys_skipped, _grad_leaves_loaded, _tensor_list_stacked),
    ),
    Entry(
        "record-fields-are-declared",
        "Instances have `__slots__`, so assigning a misspelt\n  attribute raises",
        lambda finding, facts, peer, mine: (
            finding.kind in ("tclass-raises", "family")
            and type(mine.error).__name__ == "UnknownFieldError"
        ),
    ),
    Entry(
        "in-place-all-or-nothing",
        "**In-place math is all or nothing.**",
        _any_of(_in_place_all_or_nothing, _written_back, _missing_key_first),
    ),
    Entry(
        "bitwise-in-place",
        "**`&=`, `|=`, `^=`, `%=` and `//=` work in place**",
        _any_of(_changed_in_place_later, _kept_in_place),
    ),
    Entry(
        "h5-files",
        "**HDF5 files keep their batch size and their strings.**",
        _any_of(
            _h5_peer_refuses,
            _h5_result_kept,
            _h5_keys_listed,
            _h5_missing_renamed,
            _h5_params_read,
            _h5_set_returns_self,
            _h5_rows_not_moved,
            _h5_value_not_dropped,
            _h5_repeated_rows_written,
            _h5_memmap_saved_path,
            _h5_params_missing_entry_class,
            _store_writes_grad_data,
            _stack_read_per_element,
            _ragged_batch_refused,
            _h5_cast_as_torch,
            _group_without_batch_inferred,
            _h5_masked_select_copies,
            _h5_view_class_named,
            _h5_empty_group_auto_batched,
        ),
    ),
    Entry(
        "params-write-their-data",
        "**`TensorDictParams` registers what it holds.**",
        _any_of(_params_as_modules, _params_saved),
    ),
    Entry(
        "math-beyond-the-peer",
        "**Math goes where the peer stops.** A reduction over several dims reduces all of them",
        _any_of(
            _beyond_the_peer,
            _reflected_on_ragged,
            _tensor_on_ragged,
            _tensor_spread_on_ragged,
            _nested_batch_dims_kept,
            _values_kept(*_REDUCTIONS),
            _values_not_merged,
            _intersection_without_tensors,
            _torch_dtypes,
            _softmax_on_ragged,
            _grad_spread_by_foreach,
        ),
    ),
]


def covering(finding: Finding, facts: Facts, peer: Outcome, mine: Outcome) -> str | None:
    """The name of the entry that covers ``finding``, or None (a bug)."""
    for entry in ENTRIES:
        if entry.covers(finding, facts, peer, mine):
            return entry.name
    return None


# --- open: discrepancies found and not fixed yet ------------------------------------------


def open_issue(finding: Finding) -> str | None:
    """The signature of ``finding`` if it is a known open discrepancy (``open_findings``)."""
    signature = finding.signature()
    return signature if signature in OPEN else None
