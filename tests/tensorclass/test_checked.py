"""``@tclass.checked`` (issue 31, item 4): the named dims of a function's record and
tensor arguments and of its return value bind across the call.

A mismatch is a ``FieldSpecError`` naming the argument (or the return value), the
field, the dim and both sizes; a value of a type the annotation does not name is a
``FieldTypeError``. The wrapper keeps the function's signature; ``set_checks(False)``
and ``TCLASS_CHECKS=0`` turn the checks off. The fast path (generated per function)
and the general matcher must agree: each case runs both where the fast path applies.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import annotated_types as at
import pytest
import torch

import tclass
from tclass import Spec, TensorClass, errors

try:
    import jaxtyping as jt
except ImportError:  # an optional extra: its tests skip
    jt = None

FieldSpecError = errors.FieldSpecError
Tensor = torch.Tensor
needs_jaxtyping = pytest.mark.skipif(jt is None, reason="needs jaxtyping")


class Frame(TensorClass):
    obs: Annotated[Tensor, Spec("h w", torch.float32)]
    emb: Annotated[Tensor, Spec("d")] | None = None


class Action(TensorClass):
    act: Annotated[Tensor, Spec("d", torch.float32)]
    mask: Annotated[Tensor, Spec("h w", torch.bool)] | None = None


def frame(b: int = 4, h: int = 2, w: int = 3, d: int | None = 5) -> Frame:
    emb = None if d is None else torch.zeros(b, d)
    return Frame(obs=torch.zeros(b, h, w), emb=emb, batch_size=[b])


def action(b: int = 4, d: int = 5, mask: tuple[int, int] | None = None) -> Action:
    held = None if mask is None else torch.zeros(b, *mask, dtype=torch.bool)
    return Action(act=torch.zeros(b, d), mask=held, batch_size=[b])


@tclass.checked
def step(f: Frame, a: Action) -> Frame:
    return f


def only(error: FieldSpecError) -> errors.SpecProblem:
    assert len(error.problems) == 1, error.problems
    return error.problems[0]


# --- records --------------------------------------------------------------------------------


def test_agreeing_records_pass_and_the_result_is_returned() -> None:
    f = frame()
    assert step(f, action()) is f
    assert step(f, action(mask=(2, 3))) is f
    assert step(frame(d=None), action(d=9)) is not None  # 'd' unbound in f: nothing to compare


def test_a_dim_two_records_disagree_on_names_argument_field_dim_and_sizes() -> None:
    with pytest.raises(FieldSpecError) as caught:
        step(frame(d=5), action(d=6))
    message = str(caught.value)
    assert message.startswith("step(): argument 'a' (Action.act) has shape [4, 6]")
    assert "dim 'd' is 6 here, but 5 in argument 'f' (Frame.emb)" in message
    problem = only(caught.value)
    assert (problem.argument, problem.field, problem.dim) == ("a", "act", "d")
    assert (problem.got, problem.expected, problem.other) == (6, 5, "emb")


def test_every_field_that_names_a_shared_dim_binds_it() -> None:
    with pytest.raises(FieldSpecError, match=r"argument 'a' \(Action.mask\).*dim 'w' is 4"):
        step(frame(w=3), action(mask=(2, 4)))
    with pytest.raises(FieldSpecError) as caught:  # two dims at once: both listed
        step(frame(h=2, w=3), action(mask=(5, 4)))
    assert "2 problems" in str(caught.value)
    assert [p.dim for p in caught.value.problems] == ["h", "w"]


def test_the_return_value_is_checked_against_the_arguments() -> None:
    @tclass.checked
    def grow(f: Frame, a: Action) -> Frame:
        return frame(d=a.act.shape[-1] + 1)

    with pytest.raises(FieldSpecError, match=r"grow\(\): return value \(Frame.emb\)") as caught:
        grow(frame(d=None), action(d=5))
    assert only(caught.value).argument == "return"
    assert "dim 'd' is 6 here, but 5 in argument 'a' (Action.act)" in str(caught.value)


def test_a_spec_on_a_record_annotation_names_its_batch_dims() -> None:
    @tclass.checked
    def pair(
        f: Annotated[Frame, Spec("b")], a: Annotated[Action, Spec("b")]
    ) -> Annotated[Frame, Spec("b")]:
        return f

    pair(frame(b=4), action(b=4))
    with pytest.raises(FieldSpecError, match=r"argument 'a' \(Action batch size\).*'b' is 3"):
        pair(frame(b=4), action(b=3))
    with pytest.raises(FieldSpecError, match="wants 1 dim"):
        pair(frame(b=4)[None], action(b=4))
    with pytest.raises(errors.SpecSyntaxError, match="names its batch dims"):

        @tclass.checked
        def wrong(f: Annotated[Frame, Spec("b", torch.float32)]) -> None: ...


def test_a_record_over_a_lazy_stack_binds_its_members_dims() -> None:
    stacked = tclass.lazy_stack([frame(d=5), frame(d=5)])
    assert step(stacked, action(d=5)) is stacked
    with pytest.raises(FieldSpecError, match="dim 'd' is 6 here, but 5"):
        step(stacked, action(d=6))


def test_a_subclass_instance_is_checked_by_the_general_matcher() -> None:
    class Wide(Frame):
        extra: Tensor | None = None

    wide = Wide(obs=torch.zeros(4, 2, 3), emb=torch.zeros(4, 5), batch_size=[4])
    assert step(wide, action()) is wide
    with pytest.raises(FieldSpecError, match="dim 'd'"):
        step(Wide(obs=torch.zeros(4, 2, 3), emb=torch.zeros(4, 7), batch_size=[4]), action())


# --- tensors ----------------------------------------------------------------------------------


def test_tclass_tensor_specs_check_the_whole_tensor_and_bind_its_dims() -> None:
    @tclass.checked
    def project(f: Frame, w: Annotated[Tensor, Spec("d k", torch.float32)]) -> Tensor:
        return f.emb @ w

    project(frame(d=5), torch.zeros(5, 2))
    with pytest.raises(FieldSpecError, match=r"argument 'w' has shape \[6, 2\]: dim 'd' is 6"):
        project(frame(d=5), torch.zeros(6, 2))
    with pytest.raises(FieldSpecError, match=r"argument 'w' has dtype float64, but .* float32"):
        project(frame(d=5), torch.zeros(5, 2, dtype=torch.float64))
    with pytest.raises(FieldSpecError, match=r"argument 'w' has shape \[5\]; .* wants 2 dim"):
        project(frame(d=5), torch.zeros(5))


def test_a_repeated_name_in_one_tensor_spec_is_one_size() -> None:
    @tclass.checked
    def square(m: Annotated[Tensor, Spec("n n")]) -> None: ...

    square(torch.zeros(3, 3))
    with pytest.raises(FieldSpecError, match="earlier in the same shape"):
        square(torch.zeros(3, 4))


def test_tensor_constraints_are_checked_with_the_first_offending_value() -> None:
    @tclass.checked
    def weigh(p: Annotated[Tensor, Spec("n"), at.Ge(0), at.Le(1)]) -> None: ...

    weigh(torch.tensor([0.0, 0.5, 1.0]))
    with pytest.raises(FieldSpecError) as caught:
        weigh(torch.tensor([0.0, 1.5, 2.0]))
    assert "argument 'p' holds 1.5 at index (1,), which breaks le=1" in str(caught.value)
    assert only(caught.value).element == (1,)


@needs_jaxtyping
def test_jaxtyping_tensors_bind_with_records() -> None:
    @tclass.checked
    def act(
        f: Frame,
        w: jt.Float[Tensor, "d k"],  # noqa: F722
        b: jt.Float[Tensor, " k"],  # noqa: F722
    ) -> jt.Float[Tensor, "h k"]:  # noqa: F722
        return torch.zeros(f.obs.shape[1], b.shape[0])

    act(frame(d=5, h=2), torch.zeros(5, 3), torch.zeros(3))
    with pytest.raises(FieldSpecError, match=r"argument 'b' has shape \[4\]: dim 'k' is 4"):
        act(frame(d=5), torch.zeros(5, 3), torch.zeros(4))
    with pytest.raises(FieldSpecError, match="argument 'w' has dtype int64"):
        act(frame(d=5), torch.zeros(5, 3, dtype=torch.int64), torch.zeros(3))


@needs_jaxtyping
def test_jaxtyping_fields_bind_their_batch_dims_across_arguments() -> None:
    class Obs(TensorClass):
        x: jt.Float[Tensor, "b 3"]  # noqa: F722

    @tclass.checked
    def mix(o: Obs, y: jt.Float[Tensor, " b"]) -> None: ...  # noqa: F722

    mix(Obs(x=torch.zeros(4, 3), batch_size=[4]), torch.zeros(4))
    with pytest.raises(FieldSpecError, match=r"dim 'b' is 5 here, but 4 in argument 'o' \(Obs.x\)"):
        mix(Obs(x=torch.zeros(4, 3), batch_size=[4]), torch.zeros(5))
    # A row lacks the batch dim 'b' (indexing dropped it): it binds nothing (it failed
    # reading s[-2] of its [3]-shaped field), and a function's own tensor keeps it.
    mix(Obs(x=torch.zeros(4, 3), batch_size=[4])[0], torch.zeros(5))
    with pytest.raises(FieldSpecError, match="argument 'y' has shape"):
        mix(Obs(x=torch.zeros(4, 3), batch_size=[4]), torch.zeros(()))


def test_variadic_and_computed_dims_go_through_the_general_matcher() -> None:
    class Seq(TensorClass):
        x: Annotated[Tensor, Spec("*rest d")]

    @tclass.checked
    def flat(
        s: Seq, t: Annotated[Tensor, Spec("*rest")], u: Annotated[Tensor, Spec("d+1")]
    ) -> None:
        pass

    s = Seq(x=torch.zeros(2, 3, 4, 5), batch_size=[2])
    flat(s, torch.zeros(3, 4), torch.zeros(6))
    with pytest.raises(FieldSpecError, match=r"dim '\*rest' is \[3, 5\] here, but \[3, 4\]"):
        flat(s, torch.zeros(3, 5), torch.zeros(6))
    with pytest.raises(FieldSpecError, match="computes d\\+1 = 6 \\(with d=5\\)"):
        flat(s, torch.zeros(3, 4), torch.zeros(7))


# --- what passes, what does not ---------------------------------------------------------------


def test_optional_unions_and_wrong_types() -> None:
    @tclass.checked
    def maybe(f: Frame | None, a: Action | int) -> None: ...

    maybe(None, 3)  # None where allowed, another type the union names
    maybe(frame(d=5), action(d=5))
    with pytest.raises(FieldSpecError):
        maybe(frame(d=5), action(d=6))
    with pytest.raises(errors.FieldTypeError, match=r"argument 'f' is of type Action, .* Frame"):
        maybe(action(), 3)  # type: ignore[arg-type]
    with pytest.raises(errors.FieldTypeError, match="argument 'f' is of type NoneType"):
        step(None, action())  # type: ignore[arg-type]


def test_a_function_with_nothing_to_check_is_returned_as_it_is() -> None:
    def plain(x: int, t: Tensor) -> Tensor:
        return t

    assert tclass.checked(plain) is plain


def test_the_signature_and_the_call_are_the_functions() -> None:
    def full(f: Frame, /, a: Action, *rest: int, scale: float = 2.0, **extra: Any) -> Frame:
        return f

    wrapped = tclass.checked(full)
    assert inspect.signature(wrapped) == inspect.signature(full)
    assert wrapped.__name__ == "full" and wrapped.__wrapped__ is full  # type: ignore[attr-defined]
    f = frame()
    assert wrapped(f, action(), 1, 2, scale=3.0, other=1) is f
    for call in (lambda g: g(f), lambda g: g(f=f, a=action())):  # f is positional-only
        with pytest.raises(TypeError) as theirs:
            call(full)
        with pytest.raises(TypeError) as ours:
            call(wrapped)
        assert str(ours.value) == str(theirs.value)


def test_set_checks_turns_the_contracts_off_and_back() -> None:
    assert tclass.checks_enabled()
    with tclass.set_checks(False):
        assert not tclass.checks_enabled()
        step(frame(d=5), action(d=6))  # not checked
    assert tclass.checks_enabled()
    tclass.set_checks(False)
    try:
        step(frame(d=5), action(d=6))
    finally:
        tclass.set_checks(True)
    with pytest.raises(FieldSpecError):
        step(frame(d=5), action(d=6))


def test_the_environment_variable_leaves_the_function_undecorated() -> None:
    script = (
        "import tclass, torch\n"
        "from typing import Annotated\n"
        "def f(t: Annotated[torch.Tensor, tclass.Spec('n')]) -> None: ...\n"
        "print(tclass.checked(f) is f, tclass.checks_enabled())\n"
    )
    root = Path(tclass.__file__).parents[1]
    env = {**os.environ, "TCLASS_CHECKS": "0"}
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        env=env,
    )
    assert result.stdout.split() == ["True", "False"]


def test_a_class_defined_after_the_function_is_read_at_the_first_call() -> None:
    @tclass.checked
    def later(x: Later, a: Action) -> None: ...  # noqa: F821

    class Later(TensorClass):
        z: Annotated[Tensor, Spec("d")]

    later(Later(z=torch.zeros(2, 5), batch_size=[2]), action(d=5))
    with pytest.raises(FieldSpecError, match="dim 'd' is 6"):
        later(Later(z=torch.zeros(2, 5), batch_size=[2]), action(d=6))


def test_methods_static_and_class_methods() -> None:
    class Model:
        @tclass.checked
        def forward(self, f: Frame, a: Action) -> Frame:
            return f

        @staticmethod
        @tclass.checked
        def static(f: Frame, a: Action) -> None: ...

        @tclass.checked
        @classmethod
        def build(cls, f: Frame, a: Action) -> None: ...

    model = Model()
    model.forward(frame(), action())
    for call in (model.forward, Model.static, Model.build):
        with pytest.raises(FieldSpecError, match="dim 'd'"):
            call(frame(d=5), action(d=6))


def test_a_coroutine_function_checks_its_awaited_result() -> None:
    @tclass.checked
    async def later(f: Frame, a: Action) -> Frame:
        return frame(d=7)

    assert inspect.iscoroutinefunction(later)
    with pytest.raises(FieldSpecError, match="return value"):
        asyncio.run(later(frame(d=5), action(d=5)))


@pytest.mark.parametrize("seed", range(5))
def test_the_fast_path_and_the_general_matcher_agree(seed: int) -> None:
    """Random sizes: a record over one TensorDict takes the fast path, the same record
    over a lazy stack the general matcher; both hold exactly when the dims agree."""
    generator = torch.Generator().manual_seed(seed)

    def size() -> int:
        return int(torch.randint(2, 4, (1,), generator=generator))

    for _ in range(40):
        f, a = frame(h=size(), w=size(), d=size()), action(d=size(), mask=(size(), size()))
        w = torch.zeros(size(), 2)
        contract_holds = (
            f.emb.shape[-1] == a.act.shape[-1] == w.shape[0] and a.mask.shape[1:] == f.obs.shape[1:]
        )

        @tclass.checked
        def both(f: Frame, a: Action, w: Annotated[Tensor, Spec("d k")]) -> None: ...

        for first in (f, tclass.lazy_stack([f, f])):  # the fast path, the general matcher
            try:
                both(first, a, w)
                held = True
            except FieldSpecError:
                held = False
            assert held == contract_holds
