"""A million images on disk: preallocated without RAM, filled in chunks, read by a DataLoader.

Run it with ``python examples/image_dataset.py [--chunks N] [--chunk-size N] ...``. It

1. declares an ``Image`` tensorclass (uint8 pixels, a label, the row number);
2. preallocates ``--size`` images (1,000,000 by default) on disk: one image expanded to
   the dataset size is a view (no memory), and ``memmap_like`` turns it into sparse files
   (no data written, so neither RAM nor disk is used yet);
3. fills ``--chunks`` chunks of ``--chunk-size`` images, each written straight into the
   files (a real pipeline would decode files here; pass more chunks to fill more);
4. reads the filled images with a ``torch.utils.data.DataLoader``: each batch is fetched
   with one ``__getitems__`` call (a list of indices in, one ``Image`` batch out), which
   the collate tclass registers passes through; ``--workers`` processes receive the
   dataset as file references, not copies.

After each step it prints the process's memory (RSS) and the disk space in use: both
stay at what was written or read, not the 3 GiB the dataset spans.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import cast

import torch
from torch.utils.data import DataLoader, Dataset

import tclass
from tclass import TensorClass


class Image(TensorClass):
    """One labelled image; ``index`` is its row, to check what the loader returns."""

    pixels: torch.Tensor  # uint8 [*B, 3, H, W]
    label: torch.Tensor  # int64 [*B]
    index: torch.Tensor  # int64 [*B]


class Progress:
    """Prints ``label done/total`` at most once a second, so only slow steps show it."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total = label, total
        self.last = time.perf_counter()

    def update(self, done: int) -> None:
        now = time.perf_counter()
        if now - self.last >= 1.0 and done < self.total:
            print(f"   ... {self.label} {done:,}/{self.total:,}", flush=True)
            self.last = now


def memory() -> str:
    """This process's resident memory: on Linux split into private memory (what it
    really holds) and pages of mapped files (the dataset's, which the kernel can drop
    at any time); elsewhere the peak resident size."""
    try:
        with open("/proc/self/status") as status:
            fields = dict(line.split(":", 1) for line in status)
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10
        return f"peak RSS {peak:.0f} MiB"
    anon, file = (int(fields[name].split()[0]) / 2**10 for name in ("RssAnon", "RssFile"))
    return f"RAM {anon:.0f} MiB private + {file:.0f} MiB file pages"


def disk_mib(folder: Path) -> tuple[float, float]:
    """(apparent MiB, MiB actually allocated on disk) of the files under ``folder``."""
    stats = [os.stat(Path(root) / name) for root, _, names in os.walk(folder) for name in names]
    return sum(s.st_size for s in stats) / 2**20, sum(s.st_blocks * 512 for s in stats) / 2**20


def make_chunk(start: int, count: int, side: int) -> Image:
    """``count`` synthetic images for rows ``start...``; the label is the row modulo 10."""
    rows = torch.arange(start, start + count)
    generator = torch.Generator().manual_seed(start)
    pixels = torch.randint(0, 256, (count, 3, side, side), dtype=torch.uint8, generator=generator)
    return Image(pixels=pixels, label=rows % 10, index=rows, batch_size=[count])


def preallocate(folder: Path, size: int, side: int) -> Image:
    before = memory()
    start = time.perf_counter()
    one = make_chunk(0, 1, side)[0]
    images: Image = one.expand(size).memmap_like(folder)  # a view, then sparse files
    elapsed = time.perf_counter() - start
    apparent, allocated = disk_mib(folder)
    print(
        f"1. preallocated {size:,} images of 3x{side}x{side} in {elapsed:.2f}s: the files span "
        f"{apparent / 1024:.2f} GiB, {allocated:.1f} MiB of it on disk"
    )
    print(f"   before: {before}; after: {memory()}")
    return images


def fill(images: Image, folder: Path, chunks: int, chunk_size: int, side: int) -> int:
    """Writes ``chunks`` chunks from row 0; returns the number of rows filled."""
    filled = min(chunks * chunk_size, len(images))
    progress = Progress("images written", filled)
    start = time.perf_counter()
    for first in range(0, filled, chunk_size):
        count = min(chunk_size, filled - first)
        images[first : first + count] = make_chunk(first, count, side)
        progress.update(first + count)
    elapsed = time.perf_counter() - start
    _, allocated = disk_mib(folder)
    print(
        f"2. filled {filled:,} images in {chunks} chunks of {chunk_size:,} in {elapsed:.2f}s: "
        f"{allocated:.1f} MiB on disk"
    )
    print(f"   {memory()}")
    return filled


def read(images: Image, filled: int, batch_size: int, workers: int) -> None:
    """One shuffled epoch over the filled images, checking every batch."""
    # DataLoader takes any object with __len__ and __getitem__ (and calls __getitems__ when
    # there is one); torch's annotations ask for a Dataset subclass, hence the cast.
    dataset = cast("Dataset[Image]", images[:filled])
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=workers)
    progress = Progress("batches read", len(loader))
    seen = torch.zeros(filled, dtype=torch.bool)
    start = time.perf_counter()
    batch = None
    for number, batch in enumerate(loader, 1):
        assert isinstance(batch, Image) and batch.pixels.dtype == torch.uint8
        assert torch.equal(batch.label, batch.index % 10), "labels travel with their images"
        seen[batch.index] = True
        progress.update(number)
    elapsed = time.perf_counter() - start
    assert batch is not None and bool(seen.all()), "one epoch visits every filled image once"
    print(
        f"3. read one shuffled epoch with DataLoader(num_workers={workers}) in {elapsed:.2f}s "
        f"({filled / elapsed:,.0f} images/s):"
    )
    print(
        f"   {len(loader)} batches of up to {batch_size}, each one {type(batch).__name__} "
        "record from one __getitems__ call"
    )
    print(f"   {memory()}")


def run(folder: Path, args: argparse.Namespace) -> None:
    print(f"tclass {tclass.__version__}, torch {torch.__version__}; dataset in {folder}")
    images = preallocate(folder, args.size, args.side)
    filled = fill(images, folder, args.chunks, args.chunk_size, args.side)
    read(images, filled, args.batch_size, args.workers)
    again = Image.load_memmap(folder)  # another process or a later run does just this
    last = filled - 1
    chunk_start = last - last % args.chunk_size
    expected = make_chunk(chunk_start, min(args.chunk_size, filled - chunk_start), args.side)
    assert torch.equal(again[last].pixels, expected[last - chunk_start].pixels)
    assert not again[filled : filled + 100].pixels.any(), "rows not written read as zeros"
    print(f"4. Image.load_memmap maps the {len(again):,} images again (reads nothing);")
    print(f"   rows past {filled:,} read as zeros until written")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="images in the dataset")
    parser.add_argument("--side", type=int, default=32, help="image height and width")
    parser.add_argument("--chunks", type=int, default=4, help="chunks to fill (from row 0)")
    parser.add_argument("--chunk-size", type=int, default=10_000, help="images per chunk")
    parser.add_argument("--batch-size", type=int, default=256, help="images per DataLoader batch")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    parser.add_argument(
        "--folder", type=Path, help="where to keep the dataset (default: a temporary folder)"
    )
    args = parser.parse_args()
    if args.folder is not None:
        args.folder.parent.mkdir(parents=True, exist_ok=True)
        run(args.folder, args)
        return
    with tempfile.TemporaryDirectory(prefix="tclass-images-") as tmp:
        run(Path(tmp) / "images", args)


if __name__ == "__main__":
    main()
