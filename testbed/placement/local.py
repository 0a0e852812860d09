"""A Ray cluster of a head and worker nodes on this machine, every address on loopback: for the tests, and for trying
placement without other machines (``testbed.placement.local.LocalRayCluster``).

Its node processes are Ray's own (``ray.cluster_utils.Cluster``, what Ray's tests use for several nodes on one
machine); they share the fate of the thread that started them (Ray starts them with the kernel's parent-death
signal), so a ``kill -9`` of the process that holds the cluster ends them too.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from .cluster import import_ray

NODE_ADDRESS = "127.0.0.1"


class LocalRayCluster:
    """``with LocalRayCluster(labels=[{"zone": "a"}, {"zone": "b"}]) as cluster: cluster.address``: a head node
    (labelled ``testbed-node: head``) and one worker node per entry of ``labels``."""

    def __init__(self, labels: list[dict[str, str]] | None = None, cpus_per_node: int = 1) -> None:
        self.labels = labels if labels is not None else [{"zone": "a"}, {"zone": "b"}]
        self.cpus_per_node = cpus_per_node
        self.cluster: Any = None
        self.workers: list[Any] = []

    def _node_args(self, labels: dict[str, str]) -> dict[str, Any]:
        return {"num_cpus": self.cpus_per_node, "node_ip_address": NODE_ADDRESS, "labels": labels,
                "include_dashboard": False}

    def __enter__(self) -> LocalRayCluster:
        import_ray(NODE_ADDRESS)  # first: a loopback driver's settings, which its nodes inherit
        from ray.cluster_utils import Cluster

        self.cluster = Cluster(initialize_head=True, head_node_args=self._node_args({"testbed-node": "head"}))
        try:
            self.workers = [self.cluster.add_node(**self._node_args(labels)) for labels in self.labels]
            self.cluster.wait_for_nodes()
        except BaseException:
            self.cluster.shutdown()
            raise
        return self

    @property
    def address(self) -> str:
        return self.cluster.address

    def remove_worker(self, index: int) -> None:
        """End worker node ``index`` as a lost machine would end: its processes killed."""
        self.cluster.remove_node(self.workers[index], allow_graceful=False)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.cluster.shutdown()
