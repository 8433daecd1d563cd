# kvd: the two commands a fresh Debian 12 machine needs.
#   make run    install what is missing, build, and serve the bundled model on 127.0.0.1:8000
#   make test   the same build, then every CPU test
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
HOST ?= 127.0.0.1
PORT ?= 8000
CONFIG ?=

.PHONY: all bootstrap configure build run test clean

all: build

bootstrap:
	scripts/bootstrap

configure: bootstrap
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	./$(BUILD_DIR)/kvd serve --model models/kvd-tiny --host $(HOST) --port $(PORT) \
		$(if $(CONFIG),--config $(CONFIG))

test: build
	cd $(BUILD_DIR) && ctest -LE gpu --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD_DIR)
