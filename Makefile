# kvd: the two commands a fresh Debian 12 machine needs.
#   make run    install what is missing, build, and generate from the bundled model
#   make test   the same build, then every CPU test
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
PROMPT_FILE ?= docs/examples/document_question.txt

.PHONY: all bootstrap configure build run test clean

all: build

bootstrap:
	scripts/bootstrap

configure: bootstrap
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	./$(BUILD_DIR)/kvd generate --model models/kvd-tiny --prompt-file $(PROMPT_FILE) \
		--temperature 0 --max-tokens 64

test: build
	cd $(BUILD_DIR) && ctest -LE gpu --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD_DIR)
