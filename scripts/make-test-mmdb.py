#!/usr/bin/env python3
"""Writes a small GeoIP2-Country-shaped MaxMind DB for fedns's tests.

Usage: make-test-mmdb.py OUT.mmdb CIDR=COUNTRY/CONTINENT [...]
e.g.   make-test-mmdb.py geo.mmdb 127.0.0.64/26=DE/EU 2001:db8:1::/48=US/NA

Each record holds {"country": {"iso_code": C}, "continent": {"code": K}},
the fields fedns reads. Needs PyPI mmdb-writer (scripts/test.sh installs it).
"""
import sys

from mmdb_writer import MMDBWriter
from netaddr import IPSet


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    writer = MMDBWriter(ip_version=6, ipv4_compatible=True, database_type="GeoIP2-Country")
    for entry in sys.argv[2:]:
        cidr, _, place = entry.partition("=")
        country, _, continent = place.partition("/")
        record = {}
        if country:
            record["country"] = {"iso_code": country}
        if continent:
            record["continent"] = {"code": continent}
        writer.insert_network(IPSet([cidr]), record)
    writer.to_db_file(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
