"""Call keyword arguments: ``dict(max_new_tokens=...)`` becomes ``dict(max_tokens=...)``."""

from __future__ import annotations

import libcst as cst

from sync.translator.cst_base import RecordingTransformer


def callee_name(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return None


class KeywordPass(RecordingTransformer):
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        table = self.rules.kwargs
        if not table:
            return updated_node
        callee = callee_name(updated_node.func)
        new_args, changed = [], False
        for original_arg, arg in zip(original_node.args, updated_node.args, strict=True):
            rule = table.get(arg.keyword.value) if arg.keyword is not None else None
            callees = rule.extra.get("callees") if rule is not None else None
            if rule is None or (callees and callee not in callees):
                new_args.append(arg)
                continue
            if rule.leaves_code:
                self.hit(original_arg, rule)
                new_args.append(arg)
                continue
            self.applied(original_arg, rule)
            new_args.append(arg.with_changes(keyword=cst.Name(rule.to)))
            changed = True
        return updated_node.with_changes(args=new_args) if changed else updated_node
