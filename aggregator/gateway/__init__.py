"""The aggregator as an Oblivious HTTP gateway, beyond HTTP (docs/anonymity.md): its keys
(keys.py). The HTTP side is web/gateway.py, the records store/gateway.py."""
