"""Lists what the orders store holds, one JSON object a line: {topic, partition, offset} per row.

testbed runs it after the run (the scenario's ``effects`` command) and compares it with every record the
producer saw acknowledged: an order missing from the store, or stored twice, is counted.
"""

import json
import sqlite3
import sys

if __name__ == "__main__":
    db = sqlite3.connect(sys.argv[1])
    for topic, partition, offset in db.execute("SELECT topic, partition, offset FROM orders"):
        print(json.dumps({"topic": topic, "partition": partition, "offset": offset}))
