"""import-linter's own contract types for this project (registered in pyproject.toml's
`[tool.importlinter]`, run by `lint-imports`).

`standard_library_only`: the packages named import nothing but the standard library and
themselves. It holds the measuring core (runner/timing), which the in-region kit ships to a
server's host where nothing else is installed.
"""

from __future__ import annotations

import sys

import grimp
from importlinter import Contract, ContractCheck, fields, output


class StandardLibraryOnly(Contract):
    type_name = "standard_library_only"

    modules = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        outside: list[tuple[str, str, int | None]] = []
        for package in self.modules:  # type: ignore[attr-defined]
            for module in sorted({package, *graph.find_descendants(package)}):
                for imported in sorted(graph.find_modules_directly_imported_by(module)):
                    top = imported.split(".")[0]
                    if imported == package or imported.startswith(f"{package}.") or top in sys.stdlib_module_names:
                        continue
                    details = graph.get_import_details(importer=module, imported=imported)
                    outside.append((module, imported, details[0]["line_number"] if details else None))
        return ContractCheck(kept=not outside, metadata={"outside": outside})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for module, imported, line in check.metadata["outside"]:
            output.print_error(f"{module} imports {imported} (l.{line}): not the standard library")
            output.new_line()
