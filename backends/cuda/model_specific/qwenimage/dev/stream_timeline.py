#!/usr/bin/env python3
"""Writes timeline copies of the streaming kernels' translation units for stream_timeline.cu.

Usage: stream_timeline.py SOURCE_DIR OUT_DIR

Each copy records, per CTA, %globaltimer at kernel entry (before the wait for prior grids), when
the first pipeline stage has landed, and at the end of the main loop, plus the SM it ran on
(stream_timeline_stamps.cuh). The kernels are otherwise the library's, unchanged: the copies are
made from the sources at build time, so the timeline always measures the current kernels. A
source whose anchors moved makes this script fail instead of measuring something else.
"""
import pathlib
import re
import sys

SOURCES = ["adaln_mod_projection_bf16_stream.cu", "adaln_mod_projection_fp32_stream.cu"]


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
    text, n = re.subn(r"(    __syncthreads\(\);  // stage `step`[^\n]*\n)",
                      r"\1    if (step == 0 && threadIdx.x == 0) rlk_stamp(1, rlk_gtime());\n", text)
    if n == 0:
        sys.exit(f"{name}: anchor not found: the first stage's __syncthreads")
    return text


def main() -> None:
    src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        (out / ("timeline_" + name)).write_text(patch((src / name).read_text(), name))


if __name__ == "__main__":
    main()
