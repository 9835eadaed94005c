#!/usr/bin/env python3
"""Writes timeline copies of the streaming kernels' translation units for stream_timeline.cu.

Usage: stream_timeline.py SOURCE_DIR OUT_DIR

Each copy records, per CTA, %globaltimer at kernel entry (before the wait for prior grids), when
the first pipeline stage has landed, and at the end of the main loop, plus the SM it ran on
(stream_timeline_stamps.cuh). The kernels are otherwise the library's, unchanged: the copies are
made from the sources at build time, so the timeline always measures the current kernels. The
first-stage stamp goes where a pipeline loop makes stage `step` visible: in the shared
stream_stages() of the device helpers header, of which a patched copy sits beside the TU copies
(a quoted include finds it there first), and in a TU's own loops (none now). A source
whose anchors moved makes this script fail instead of measuring something else.
"""
import pathlib
import re
import sys

# Each TU, and how many pipeline loops of its own it has (the others use stream_stages()).
SOURCES = {"adaln_mod_projection_bf16_stream.cu": 0}
HEADER = "adaln_mod_projection_device.cuh"


def stamp_first_stage(text: str, name: str, loops: int) -> str:
    text, n = re.subn(r"(    __syncthreads\(\);  // stage `step`[^\n]*\n)",
                      r"\1    if (step == 0 && threadIdx.x == 0) rlk_stamp(1, rlk_gtime());\n", text)
    if n != loops:
        sys.exit(f"{name}: {n} first-stage anchors (a __syncthreads making stage `step` visible), expected {loops}")
    return text


def patch(text: str, name: str) -> str:
    edits = [
        ('#include "adaln_mod_projection_launch.hpp"',
         '#include "adaln_mod_projection_launch.hpp"\n#include "stream_timeline_stamps.cuh"'),
        ("  await_prior_grids();",
         "  const unsigned long long rlk_t0 = rlk_gtime();\n  await_prior_grids();"),
        ("  release_dependent_grids();",
         "  if (threadIdx.x == 0) { rlk_stamp(0, rlk_t0); rlk_stamp(2, rlk_gtime()); }\n"
         "  release_dependent_grids();"),
    ]
    for old, new in edits:
        if old not in text:
            sys.exit(f"{name}: anchor not found: {old!r}")
        text = text.replace(old, new)
    return stamp_first_stage(text, name, SOURCES[name])


def main() -> None:
    src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        (out / ("timeline_" + name)).write_text(patch((src / name).read_text(), name))
    header = (src / HEADER).read_text()
    anchor = "#pragma once\n"
    if anchor not in header:
        sys.exit(f"{HEADER}: anchor not found: {anchor!r}")
    header = header.replace(anchor, anchor + '\n#include "stream_timeline_stamps.cuh"\n', 1)
    (out / HEADER).write_text(stamp_first_stage(header, HEADER, 1))


if __name__ == "__main__":
    main()
