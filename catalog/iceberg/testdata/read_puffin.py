"""Read a Puffin file of deletion vectors with PyIceberg's own reader and
print, as JSON, the footer properties and each referenced data file's
deleted positions. The Go test (puffin_test.go) compares them.

usage: python read_puffin.py <file.puffin>
"""

import json
import sys

from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
from pyiceberg.table.puffin import PuffinFile

with open(sys.argv[1], "rb") as f:
    puffin = PuffinFile(f.read())

print(
    json.dumps(
        {
            "properties": puffin.footer.properties,
            "blobs": [
                {"type": b.type, "fields": b.fields, "snapshot_id": b.snapshot_id, "sequence_number": b.sequence_number,
                 "offset": b.offset, "length": b.length, "properties": b.properties}
                for b in puffin.footer.blobs
            ],
            "positions": {dv.referenced_data_file: dv.to_vector().to_pylist() for dv in deletion_vectors_from_puffin_file(puffin)},
        }
    )
)
