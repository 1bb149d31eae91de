"""The support matrix: which (media, mode, device, library, transform) cells can be measured, and why not.

One module owns every "unsupported" reason, so `plan` refuses impossible cells with the same words the
result files and the paper tables carry. Runtime availability (a library not installed, no CUDA device)
is the adapters' call at run time; this is the static part.
"""

from __future__ import annotations

from bench_assets.augbench.catalog import row

LIBRARIES = ("albumentationsx", "torchvision", "kornia", "pillow", "dali")
MODES = ("micro", "dataloader")
DEVICES = ("cpu", "cuda")
LIBRARY_DEVICES = {"albumentationsx": ("cpu",), "pillow": ("cpu",), "torchvision": ("cpu", "cuda"),
                   "kornia": ("cpu", "cuda"), "dali": ("cuda",)}


def library_reason(media: str, mode: str, device: str, library: str) -> str | None:
    """Why `library` cannot run this (media, mode, device) row at all; None when it can."""
    if library not in LIBRARIES:
        return f"unknown library {library!r}; known: {', '.join(LIBRARIES)}"
    if device not in LIBRARY_DEVICES[library]:
        where = " and ".join(d.upper() for d in LIBRARY_DEVICES[library])
        return f"{library} runs on {where} only, not on {device.upper()}"
    if library == "pillow" and media != "rgb":
        return "Pillow has no 9-channel or video image type"
    if library == "dali" and mode == "micro":
        return "DALI runs whole GPU pipelines; it has no single-transform micro path"
    return None


def cell_reason(media: str, mode: str, device: str, library: str, transform: str) -> str | None:
    """Why the (transform, library) cell of a row is unsupported; None when it is to be measured."""
    reason = library_reason(media, mode, device, library)
    if reason:
        return reason
    r = row(media, transform)
    if r is None:
        return f"{transform} is not in the {media} transform set"
    offered = r.libraries if mode == "micro" else r.dataloader_libraries
    if library not in offered:
        return f"{library} has no {transform} equivalent for {media} ({mode})"
    return None


def matrix(media: str, mode: str, device: str, libraries: list[str], transforms: list[str]
           ) -> dict[tuple[str, str], str | None]:
    """(transform, library) -> unsupported reason or None, for every cell of a row family."""
    return {(t, lib): cell_reason(media, mode, device, lib, t) for t in transforms for lib in libraries}
