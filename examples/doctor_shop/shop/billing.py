import requests

from shop.app import app

PAYMENTS_TIMEOUT = 10


@app.job(timeout=8, kill_after=2, queue="billing")
def capture_payment(payment_id: int) -> None:
    requests.post(
        "https://payments.example/capture",
        json={"id": payment_id},
        timeout=PAYMENTS_TIMEOUT,
    )


@app.job(timeout=5, kill_after=1, queue="emails")
def send_receipt(payment_id: int) -> None:
    requests.post("https://mail.example/send", json={"payment": payment_id})
