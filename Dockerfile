# The image compose.yaml runs for the service and workers (not the sandbox image:
# that one is built locally by `clade images build`).
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends git debootstrap docker.io \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir -e . flower
ENV CLADE_DATA_DIR=/data
EXPOSE 8420
CMD ["clade", "serve"]
