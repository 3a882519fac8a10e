"""vime-sync follow: mirror upstream PR by PR as they land, on one long-lived branch (``sync/follow``).

Each PR is a window of its own, made by the window's stages (translate, merge, reports), committed on
the follow branch, resolved by itself when no question needs a person (recorded decisions and
proposed defaults), gated against the tree before it, all as one transaction per PR. ``steps`` says
which PRs come next, ``site`` finds or makes the branch and worktree, ``step`` runs one PR, ``gate``
judges one PR's tree, ``run`` is the loop that stops at the first PR that needs a person.
"""
