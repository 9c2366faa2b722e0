import httpx

from shop.app import app


@app.job(timeout=300)
def import_supplier_feed(supplier_id: int) -> None:
    with httpx.Client(timeout=30) as client:
        feed = client.get(f"https://suppliers.example/{supplier_id}/feed.json")
        print(len(feed.content))


@app.job(timeout=20, kill_after=5)
def reindex_product(product_id: int) -> None:
    print("reindex", product_id)
