"""A stand-in for Search-R1's retrieval server: ``POST /retrieve`` over a tiny in-memory corpus.

    python benchmarks/search_standin.py PORT

Answers ``{"queries": [...], "topk": k}`` with ``{"result": [[{"id", "contents"}, ...], ...]}``
(the retrieval server's shape that slime's ``local_search_server.py`` reads), ranked by word overlap.
"""

from __future__ import annotations

import sys

from aiohttp import web

CORPUS = [
    '"Arithmetic"\nTwo plus two is four. One plus one is two.',
    '"Sums"\nThree plus four is seven. Five plus three is eight.',
    '"Paris"\nParis is the capital of France.',
    '"Tokyo"\nTokyo is the capital of Japan.',
]


def _overlap(query: str, doc: str) -> int:
    return len(set(query.lower().split()) & set(doc.lower().replace(".", " ").split()))


async def retrieve(request: web.Request) -> web.Response:
    body = await request.json()
    k = int(body.get("topk", 3))
    result = []
    for query in body["queries"]:
        ranked = sorted(CORPUS, key=lambda doc: -_overlap(query, doc))[:k]
        result.append([{"id": str(i), "contents": doc} for i, doc in enumerate(ranked)])
    return web.json_response({"result": result})


def main() -> None:
    app = web.Application()
    app.router.add_post("/retrieve", retrieve)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)


if __name__ == "__main__":
    main()
