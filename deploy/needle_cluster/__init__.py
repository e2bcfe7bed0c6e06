"""Local Apache Cassandra clusters for Needle: start, stop, kill and restart nodes.

Python use::

    from needle_cluster import Cluster
    with Cluster.up(3, dir="/tmp/c") as c:
        c.cql(1, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
        c.kill(2)
        c.start(2)
"""

from .cluster import Cluster
from .errors import ClusterError
from .runtime import DEFAULT_VERSION

__all__ = ["Cluster", "ClusterError", "DEFAULT_VERSION"]
