"""``bench view``: the results in a browser (runs, one run's pick and matrix with filters, a cell's
attempts with the requests the SDK sent, two runs side by side), live on loopback or exported
as static files. See :mod:`bench.view.site` and :mod:`bench.view.data`."""
