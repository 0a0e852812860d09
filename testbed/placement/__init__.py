"""Members placed on the nodes of a Ray cluster: a run given a Ray address (``TESTBED_RAY_ADDRESS``, ``testbed run
--ray``) starts each fleet entry's member processes on the nodes its ``placement`` chooses, through one actor per node
(``node_host.NodeHost``) that starts, signals and reaps them there and hands their files back, so that the run
directory on this machine ends up whole, as if every member had run here (docs/placement.md).

Ray is optional: nothing here imports it until a run asks for a cluster (``cluster``)."""
