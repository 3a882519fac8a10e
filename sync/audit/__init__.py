"""vime-sync audit: account for every hunk each upstream PR of a range changed, in the downstream.

``history`` lists each upstream file's versions across the range (following renames), ``lines``
replays them with an identity per line (which PR wrote each line, which PR removed it), ``decided``
reads the answers recorded in the downstream's report folders, ``accounts`` judges each hunk
against the downstream file (present, superseded, excluded, decided, port request, or an
omission), ``run`` ties them together and ``report`` prints the result.
"""
