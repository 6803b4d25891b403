"""Push notifications: where a delivery may go (``urls``), how it is signed and sent
(``sender``), what its body says (``bodies``). The loop that drains the outbox is
``runtime/deliverer.py``; the outbox itself is the store's (``store/outbox.py``)."""
