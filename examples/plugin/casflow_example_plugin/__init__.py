"""An example casflow plug-in: tags gene mentions from a word list.

Install it (``pip install -e examples/plugin``) and the component is available
to every workflow as ``example.dictionary_genes.v1``; ``casflow components``
lists it with its origin.
"""

from __future__ import annotations

import re

import cassis
from pydantic import Field

from casflow.pipeline.component import ComponentConfig, Processor, RunContext
from casflow.typesystem import GENE_MENTION, TOKEN


class DictionaryGeneTaggerConfig(ComponentConfig):
    names: list[str] = Field(description="Gene names to tag (matched as whole tokens).")
    case_sensitive: bool = Field(True, description="Match case exactly.")
    label: str = Field("GENE", description="Class label written to GeneMention.value.")


class DictionaryGeneTagger(Processor[DictionaryGeneTaggerConfig]):
    name = "example.dictionary_genes.v1"
    description = "Tags tokens found in a gene-name list as GeneMention."
    requires = (TOKEN,)
    produces = (GENE_MENTION,)

    def __init__(
        self, config: DictionaryGeneTaggerConfig, context: RunContext | None = None
    ) -> None:
        super().__init__(config, context)
        flags = 0 if config.case_sensitive else re.IGNORECASE
        # Compiled once per worker process, not per document.
        self._pattern = re.compile("|".join(re.escape(n) for n in config.names), flags)

    def process(self, view: cassis.Cas) -> None:
        gene_type = view.typesystem.get_type(GENE_MENTION)
        mentions = [
            gene_type(begin=t.begin, end=t.end, value=self.config.label)
            for t in view.select(TOKEN)
            if self._pattern.fullmatch(t.get_covered_text())
        ]
        view.add_all(mentions)
