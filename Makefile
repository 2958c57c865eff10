# Thin convenience layer over CMake. `make run` and `make test` do all set-up on a fresh Debian 12.
BUILD ?= build
JOBS  ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release

.PHONY: deps configure build run test bench screenshots fuzz sanitize cluster-test clean
SECONDS ?= 60

deps:
	@bash tools/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/app/attnscope $(ARGS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Benchmarks (never part of `make test`): prints the figures and writes them into docs/performance.md.
bench: build
	bash bench/run_benchmarks.sh $(BUILD)

# libFuzzer campaigns (clang, ASan + UBSan): every parser's harness for SECONDS seconds; findings in build-fuzz.
fuzz: deps
	@bash tools/install-deps.sh clang libclang-rt-14-dev libomp-dev
	@CC=clang CXX=clang++ cmake -S . -B build-fuzz -DATTNSCOPE_FUZZ=ON -DATTNSCOPE_BUILD_GUI=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build-fuzz -j $(JOBS)
	bash tests/fuzz/run_fuzzers.sh build-fuzz $(SECONDS)

# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer, in a build folder of its own.
sanitize: deps
	@cmake -S . -B build-sanitize -DATTNSCOPE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build-sanitize -j $(JOBS)
	cd build-sanitize && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

# A one-node Slurm cluster on this machine (slurm-wlm and munge, installed by the script; needs root or sudo): the
# job scripts of tools/slurm scan a built-in model in 4 shards, merge, and are compared with a single scan.
cluster-test: build
	bash tests/cluster/run_cluster_test.sh $(BUILD)

# Regenerates docs/images: the real window under Xvfb (installed by deps), then docs/models.md's Fig. 5/7 pictures.
screenshots: build
	xvfb-run -a -s "-screen 0 1280x800x24 -dpi 96" ./$(BUILD)/app/attnscope-docshots docs/images ../shared/data/wikitext-2/valid.txt
	for f in 5 7; do QT_QPA_PLATFORM=offscreen ./$(BUILD)/app/attnscope --model builtin:txl-wikitext2 \
	  --text-file ../shared/data/wikitext-2/valid.txt --max-tokens 20000 --paper-figure $$f --height 700 \
	  --export docs/images/models-txl-fig$$f.png; done
	for v in "--paper-figure 5:fig5" "--view bands:bands"; do QT_QPA_PLATFORM=offscreen ./$(BUILD)/app/attnscope \
	  --model builtin:llama-wikitext2 --text-file ../shared/data/wikitext-2/valid.txt --max-tokens 20000 \
	  $${v%%:*} --height 700 --export docs/images/models-llama-$${v##*:}.png; done

clean:
	rm -rf $(BUILD) build-fuzz build-sanitize
