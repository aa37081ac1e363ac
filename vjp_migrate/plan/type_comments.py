"""Plan, step 4a: the PEP 484 type comments of the rules, `# type: (A, B) -> R` under (or on)
the def line and `# type: A` after a parameter, read as annotations of an analysis view of the
def, so that step 4 (annotations) retypes them as it retypes annotations (section 3h)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

import libcst as cst

from vjp_migrate.imports import ImportTable
from vjp_migrate.model import FunctionRef, TupleType, TypeComments, TypedParam, VjpSite

Edit = tuple[cst.Param | cst.FunctionDef, cst.Annotation | TupleType | None]  # plan.annotations.retyped's
Retyped = tuple[Edit, ...]

# What CPython's tokenizer takes for a type comment (`#`, blanks, `type:`, blanks), and the
# `# type: ignore` it tells apart from one.
_TYPE_COMMENT = re.compile(r"#[ \t]*type:[ \t]*")
_IGNORE = re.compile(r"ignore(?![A-Za-z0-9])")
_TAIL = re.compile(r"\s*(?:#.*)?")  # what may follow a type in its comment: a comment of its own


def type_text(comment: cst.Comment | None) -> str | None:
    """The type a comment gives (`# type: A` -> `A`); None for any other comment, `# type: ignore` included."""
    if comment is None or (found := _TYPE_COMMENT.match(comment.value)) is None:
        return None
    text = comment.value[found.end() :]
    return None if _IGNORE.match(text) else text


def all_params(func: cst.FunctionDef) -> list[cst.Param]:
    """Every parameter of ``func`` in order, `*args` and `**kwargs` included (a signature comment lists them all)."""
    params = func.params
    star = [params.star_arg] if isinstance(params.star_arg, cst.Param) else []
    kwargs = [params.star_kwarg] if params.star_kwarg is not None else []
    return [*params.posonly_params, *params.params, *star, *params.kwonly_params, *kwargs]


def _function_comment(func: cst.FunctionDef) -> tuple[cst.Comment, int | None] | None:
    """The function's type comment: on the def line (None), or the first among the lines above
    its first statement (their index), as Python's grammar reads it."""
    body = func.body
    if not isinstance(body, cst.IndentedBlock):
        return None
    if type_text(body.header.comment) is not None:
        assert body.header.comment is not None
        return body.header.comment, None
    for index, line in enumerate(leading_lines(body.body[0]) if body.body else ()):
        if type_text(line.comment) is not None:
            assert line.comment is not None
            return line.comment, index
    return None


def leading_lines(statement: cst.BaseStatement) -> Sequence[cst.EmptyLine]:
    """The lines above a statement (every statement has them; LibCST's base class does not say so)."""
    assert isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    return statement.leading_lines


def _param_comment(param: cst.Param) -> cst.Comment | None:
    """The comment ending the line of ``param`` (after its comma, or after it before `)`)."""
    whitespace = param.comma.whitespace_after if isinstance(param.comma, cst.Comma) else param.whitespace_after_param
    return whitespace.first_line.comment if isinstance(whitespace, cst.ParenthesizedWhitespace) else None


def _segment(raw: bytes, node: ast.expr) -> cst.BaseExpression | None:
    """The type ``node`` covers in ``raw`` (ast counts UTF-8 bytes), as LibCST reads it."""
    try:
        return cst.parse_expression(raw[node.col_offset : node.end_col_offset].decode())
    except (cst.ParserSyntaxError, UnicodeDecodeError):
        return None


def _ending(raw: bytes, node: ast.expr) -> tuple[cst.BaseExpression, str] | None:
    """The type ending the comment, and what follows it: blanks and a comment (None: anything
    else, a closing parenthesis)."""
    found = _segment(raw, node)
    rest = raw[node.end_col_offset or 0 :].decode(errors="replace")
    return (found, rest) if found is not None and _TAIL.fullmatch(rest) else None


def _parsed(text: str, mode: str) -> ast.AST | None:
    try:
        return ast.parse(text, mode=mode)
    except (SyntaxError, ValueError):
        return None


def names_read(comment: cst.Comment) -> set[str]:
    """The names a type comment reads, as mypy reads them (`# type: (A, B) -> R`, `# type: A`,
    a string type parsed in turn); none for any other comment."""
    text = type_text(comment)
    tree = None if text is None else _parsed(text, "func_type") or _parsed(text, "eval")
    return _names_of(tree) if tree is not None else set()


def _names_of(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            quoted = _parsed(node.value, "eval")  # a forward reference, `-> "Tuple[A, B]"`
            found |= _names_of(quoted) if quoted is not None else set()
    return found


def _signature(text: str) -> tuple[list[cst.BaseExpression] | None, cst.BaseExpression, str] | None:
    """`(A, B) -> R`: its types (None for `(...)`), return type and tail; None when it is none."""
    tree = _parsed(text, "func_type")
    if not isinstance(tree, ast.FunctionType):
        return None
    raw = text.encode()
    returned = _ending(raw, tree.returns)
    argtypes = tree.argtypes
    if returned is None:
        return None
    if len(argtypes) == 1 and isinstance(argtypes[0], ast.Constant) and argtypes[0].value is Ellipsis:
        return None, *returned
    types = [_segment(raw, t) for t in argtypes]  # `*A` and `**A` lose their stars: all_params has them
    listed = [t for t in types if t is not None]
    return (listed, *returned) if len(listed) == len(types) else None


def _param_type(text: str) -> tuple[cst.BaseExpression, str] | None:
    """`A` of a parameter's comment, and its tail (None: no type)."""
    tree = _parsed(text, "eval")
    return _ending(text.encode(), tree.body) if isinstance(tree, ast.Expression) else None


def any_spelling(imports: ImportTable) -> str | None:
    """How the module spells `typing.Any`: its imported name, or `typing.Any` through the module's name for typing."""
    usable = {local: name for local, name in imports.aliases.items() if local not in imports.shadowed}
    for wanted, suffix in (("typing.Any", ""), ("typing_extensions.Any", ""), ("typing", ".Any")):
        for local, name in usable.items():
            if name == wanted:
                return local + suffix
    return None


def read_type_comments(ref: FunctionRef | None, role: str, imports: ImportTable) -> TypeComments | str | None:
    """The type comments of a rule (None: it has none), or why its function's comment cannot be
    read as its signature (VJP003: the change would leave it wrong)."""
    func = ref.node if ref is not None and ref.lambda_node is None else None
    if func is None:
        return None
    found = _function_comment(func)
    params = all_params(func)
    own = {id(p): c for p in params if (c := _param_comment(p)) is not None and type_text(c) is not None}
    if found is None and not own:
        return None
    types, typed = _param_types(params, own)
    signature: tuple[list[cst.BaseExpression] | None, cst.BaseExpression, str] | None = None
    if found is not None:
        signature = _signature(type_text(found[0]) or "")
        problem = _unreadable(func, found[0], signature, bool(own))
        if problem is not None:
            return f"{role} `{func.name.value}` has the type comment `{found[0].value}`, {problem}: {_LEFT_WRONG}"
        assert signature is not None
    argtypes = signature[0] if signature is not None else None
    skip = argtypes is not None and len(argtypes) == len(params) - 1
    if argtypes is not None:
        types.update((id(p), t) for p, t in zip(params[skip:], argtypes, strict=True))
    returns = cst.Annotation(signature[1]) if signature is not None else func.returns
    view = func.with_changes(params=_annotated(func.params, types), returns=returns)
    text = found[0].value if found is not None else ""
    return TypeComments(
        func=func,
        view=view,
        comment=found[0] if found is not None else None,
        line=found[1] if found is not None else None,
        head=text[: len(text) - len(type_text(found[0]) or "")] if found is not None else "",
        tail=signature[2] if signature is not None else "",
        listed=argtypes is not None,
        self_omitted=skip,
        params=tuple(
            TypedParam(p, v, *typed.get(id(p), (None, ""))) for p, v in zip(params, all_params(view), strict=True)
        ),
        any_type=any_spelling(imports) if ref is not None and ref.path is None else None,
    )


def _param_types(
    params: Sequence[cst.Param], own: dict[int, cst.Comment]
) -> tuple[dict[int, cst.BaseExpression], dict[int, tuple[str, str]]]:
    """The types the parameters' own comments give, by id, and the heads and tails of those
    comments. One that is no type, or next to an annotation (mypy rejects both), is left as it
    is: it is read as no type, so the change does not retype it."""
    types: dict[int, cst.BaseExpression] = {}
    typed: dict[int, tuple[str, str]] = {}
    for param in params:
        text = type_text(own.get(id(param)))
        parsed = _param_type(text) if text is not None else None
        if text is None or parsed is None or param.annotation is not None:
            continue
        value = own[id(param)].value
        types[id(param)] = parsed[0]
        typed[id(param)] = (value[: len(value) - len(text)], parsed[1])
    return types, typed


def _unreadable(
    func: cst.FunctionDef,
    comment: cst.Comment,
    signature: tuple[list[cst.BaseExpression] | None, cst.BaseExpression, str] | None,
    param_comments: bool,
) -> str | None:
    """Why the function's comment is no signature of ``func`` (None: it is one)."""
    if signature is None:
        return "which is no signature `(A, B) -> R`"
    params = all_params(func)
    argtypes = signature[0]
    if func.returns is not None or any(p.annotation is not None for p in params) or (argtypes and param_comments):
        return "and other types, which mypy rejects"
    if argtypes is None or len(argtypes) == len(params):
        return None
    if len(argtypes) == len(params) - 1 and params[0].name.value in ("self", "cls"):
        return None  # a method's, which may leave out its first parameter
    return f"which lists {len(argtypes)} types for its {len(params)} parameters"


_LEFT_WRONG = "the change to its signature would leave it wrong; correct it or remove it"


def _annotated(params: cst.Parameters, types: dict[int, cst.BaseExpression]) -> cst.Parameters:
    def each(group: Sequence[cst.Param]) -> list[cst.Param]:
        return [p.with_changes(annotation=cst.Annotation(types[id(p)])) if id(p) in types else p for p in group]

    star = params.star_arg
    kwargs = params.star_kwarg
    return params.with_changes(
        posonly_params=each(params.posonly_params),
        params=each(params.params),
        star_arg=each([star])[0] if isinstance(star, cst.Param) else star,
        kwonly_params=each(params.kwonly_params),
        star_kwarg=each([kwargs])[0] if kwargs is not None else None,
    )


def retyped_with_comments(
    site: VjpSite, comments: tuple[TypeComments | None, TypeComments | None], retype: Callable[[VjpSite], Retyped]
) -> tuple[Retyped, tuple[TypeComments, ...]]:
    """``retype`` (plan.annotations.retyped) run over the rules seen through the views of their
    type comments (fwd's and bwd's ``comments``): what it retypes in the module (an annotation of
    a def with comments too), and the comments with what it retypes in them. fwd's comments only
    when they change; bwd's always, as its parameters do."""
    fwd, bwd = comments
    seen = site
    if fwd is not None and site.fwd is not None:
        seen = replace(seen, fwd=replace(site.fwd, node=fwd.view))
    if bwd is not None and site.bwd is not None:
        seen = replace(seen, bwd=replace(site.bwd, node=bwd.view))
    edits = retype(seen)
    owners: dict[int, tuple[TypeComments, cst.Param | cst.FunctionDef | None]] = {}
    for found in (c for c in comments if c is not None):
        # A type written inline stays inline: its edit goes to the def's own node.
        owners[id(found.view)] = (found, found.func if found.comment is None else None)
        for typed in found.params:
            owners[id(typed.view)] = (found, typed.param if typed.param.annotation is not None else None)
    module: list[Edit] = []
    in_comments: dict[int, list[Edit]] = {}
    for node, new in edits:
        owner, inline = owners.get(id(node), (None, None))
        if owner is None or inline is not None:
            module.append((inline or node, new))
        else:
            in_comments.setdefault(id(owner), []).append((node, new))
    kept = tuple(
        replace(c, retyped=tuple(in_comments.get(id(c), ())))
        for c in (fwd, bwd)
        if c is not None and (c is bwd or id(c) in in_comments)
    )
    return tuple(module), kept
