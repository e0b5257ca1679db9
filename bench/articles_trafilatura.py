"""trafilatura over the shared article corpus, in one process, as score.py expects its input.

For each page in the order of PAGES_FILE (lines "<set>/<id>"):
    trafilatura.extract(html, url=url, output_format="txt", include_comments=False)
with url from the page's meta.json. Without comments (its default keeps them) is how the corpus
README's reference figures come out (0.842 / 0.955 / 0.908 / 0.938, all 0.909; with comments
dragnet falls to 0.805): trafilatura at its best on articles.
Writes OUT_JSON ({"<set>/<id>": text or null}) and prints one line of JSON with the CPU
seconds (user + system of this process, start-up included) and peak RSS in KiB.

usage: python bench/articles_trafilatura.py CORPUS_DIR PAGES_FILE OUT_JSON
"""
import json
import os
import resource
import sys
import time

started = time.process_time()
import trafilatura  # noqa: E402  (the import is part of start-up, and is timed)

corpus, pages_file, out = sys.argv[1:4]
texts = {}
for name in open(pages_file).read().split():
    page = os.path.join(corpus, name)
    with open(os.path.join(page, "source.html"), "rb") as f:
        html = f.read()
    with open(os.path.join(page, "meta.json")) as f:
        url = json.load(f).get("url")
    texts[name] = trafilatura.extract(html, url=url, output_format="txt", include_comments=False)
with open(out, "w") as f:
    json.dump(texts, f)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu_seconds": round(time.process_time() - started, 3),
                  "peak_rss_kib": usage.ru_maxrss, "pages": len(texts)}))
