"""The modelled machine: hosts (cores, per-core speed, rack) and the network between them.

`load_platform` reads a platform TOML file, a SimGrid platform XML file or a builtin name;
`Platform` answers routes (latency sum, bottleneck bandwidth) and message times in ticks.
"""

from cosim.platform.loaders import available_platforms, load_platform
from cosim.platform.model import Host, Platform, Route

__all__ = ["Platform", "Host", "Route", "load_platform", "available_platforms"]
