# The pgflight Python package with sqitch, for `pgflight migrate` and `pgflight worker`.
#   docker build -t pgflight -f docker/worker.Dockerfile .
FROM python:3.12-slim-bookworm

RUN apt-get update \
 && apt-get install -y --no-install-recommends sqitch postgresql-client \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml ./
COPY python_worker ./python_worker
COPY examples ./examples
RUN pip install --no-cache-dir .
# Migrations are read from the checkout layout: sqitch.plan next to python_worker/.
COPY sqitch.plan sqitch.conf ./
COPY sql ./sql
# Installed non-editable, the package lives in site-packages; point it back at /app.
ENV PYTHONPATH=/app/python_worker

RUN useradd --create-home --uid 10001 pgflight
USER pgflight
ENTRYPOINT ["pgflight"]
CMD ["worker"]
