"""The ground floor of vime-sync: the data every stage shares, and the names of its own artefacts.

Plain types and pure functions only. It imports nothing else of ``sync`` (``tests/test_import_graph.py``
holds it to that), so the window, the reports, the ledger, the gate and ``follow`` can all import it
without an import running back up.
"""
