"""Messages between the batch level and the application level (facts and commands)."""

from cosim.protocol.messages import (
    AppCompleted, AppStarted, Command, Fact, HostsYielded, KillApp, StartApp,
)

__all__ = ["AppCompleted", "AppStarted", "Command", "Fact", "HostsYielded", "KillApp",
           "StartApp"]
