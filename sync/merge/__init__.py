"""The file merge: three translated texts in, one outcome out (line merge, per-definition merge,
whitespace-aware defaults). Plain data and pure functions over sync.model, below the window stages
and the reports that both use them."""
