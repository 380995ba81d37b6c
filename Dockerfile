# syntax=docker/dockerfile:1
# The scheduler extender image: `python -m app serve` as a non-root user on a slim Python base.
# Build: docker build -t scheduler-extender:0.1.0 .  (--build-arg PLUGIN_PACKAGES=... adds plugins)
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# Stage 1: install the package and its dependencies (all from wheels) into a virtualenv.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml requirements.lock README.md LICENSE ./
COPY third_party ./third_party
COPY app ./app
# The dependencies exactly as locked (each file checked against its hash in requirements.lock, wheels
# only), then zttp rebuilt from its checked sdist with third_party/zttp's patch (HTTP/2 connections
# that live as long as kube-scheduler keeps them; its pinned Zig compiler comes as a wheel), then
# the package itself without resolving anything again: the same image every day.
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip install --no-cache-dir --only-binary=:all: --require-hashes -r requirements.lock \
    && /opt/venv/bin/python third_party/zttp/build.py --install \
    && rm -rf /root/.cache \
    && /opt/venv/bin/pip install --no-cache-dir --no-deps --no-binary=scheduler-extender .
# Out-of-tree policy plugins (docs/install/image.md, "Plugins in the image"): pip requirement
# specifiers, separated by spaces, of distributions that declare a `scheduler_extender.plugins`
# entry point, such as
#   docker build --build-arg PLUGIN_PACKAGES="my-policies==1.2.0" -t scheduler-extender-plus:0.1.0 .
# Empty (the default): the in-tree plugins only. What is installed above is a constraint: a plugin
# that needs another version of this service or of one of its dependencies fails the build.
ARG PLUGIN_PACKAGES=""
RUN if [ -n "$PLUGIN_PACKAGES" ]; then \
        /opt/venv/bin/pip list --format=freeze > /opt/venv/installed.txt \
        && /opt/venv/bin/pip install --no-cache-dir --constraint /opt/venv/installed.txt $PLUGIN_PACKAGES \
        && rm /opt/venv/installed.txt; \
    fi

# Stage 2: the runtime: the virtualenv only, no compilers, no build tools, no package cache.
FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="scheduler-extender" \
      org.opencontainers.image.description="Kubernetes scheduler extender (filter, prioritize, preempt, bind) with pluggable policies" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# 65532: the conventional non-root uid (distroless "nonroot"); the rendered pods run as it too.
USER 65532:65532
WORKDIR /
EXPOSE 8888
ENTRYPOINT ["python", "-m", "app", "serve"]
# Inside a container the service must listen beyond loopback; a pod spec's `args` replace this.
CMD ["--host", "0.0.0.0"]
