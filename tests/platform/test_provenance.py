"""What provenance reads off the machine: the first processor of /proc/cpuinfo and the kind of host it names."""

from __future__ import annotations

from bench_assets.platform.provenance import first_cpu

# The layout the Linux kernel writes (two processors, fields abridged; values from a 2-core Zen 3 guest)
CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
flags\t\t: fpu vme avx avx2 fma sha_ni

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: Other CPU
flags\t\t: fpu avx512f
"""


def test_first_cpu_reads_the_first_processor_only() -> None:
    info = first_cpu(CPUINFO)
    assert info["model name"] == "AMD EPYC" and info["model"] == "1" and info["cpu family"] == "25"
    assert "avx512f" not in info["flags"].split() and "avx2" in info["flags"].split()
    assert first_cpu("") == {} and first_cpu("no colon here\n") == {}
