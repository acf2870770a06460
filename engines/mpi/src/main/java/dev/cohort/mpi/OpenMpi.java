package dev.cohort.mpi;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.ReduceOp;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Open MPI's C API through the foreign-function API. Open MPI's handles ({@code MPI_COMM_WORLD},
 * {@code MPI_FLOAT}, {@code MPI_SUM}, ...) are the addresses of its exported globals
 * ({@code ompi_mpi_comm_world}, ...); a communicator or request made at run time is a pointer.
 * One instance per process: MPI is initialized once (asking for {@code MPI_THREAD_MULTIPLE}, at
 * least {@code MPI_THREAD_SERIALIZED}: a group's calls run one at a time, from whichever thread
 * runs its call queue, and a watchdog may abort while one blocks) and finalized when the last
 * backend using it closes; it cannot be initialized again in the same process.
 *
 * <p>Every function returns MPI's error code; {@link #check} turns one into an exception with
 * MPI's own text. Communicators Cohort makes return errors instead of aborting.
 */
final class OpenMpi {

    /** MPI_THREAD_SERIALIZED: calls one at a time, from any thread. */
    private static final int THREAD_SERIALIZED = 2;
    /** MPI_THREAD_MULTIPLE: asked for, so that the watchdog may abort while a call blocks. */
    private static final int THREAD_MULTIPLE = 3;
    /** MPI_COMM_TYPE_SHARED: the ranks that share memory (a host). */
    static final int COMM_TYPE_SHARED = 0;
    /** MPI_UNDEFINED: a split's color for the ranks left out. */
    static final int UNDEFINED = -32766;
    /** MPI_IN_PLACE. */
    private static final System.Logger LOG = System.getLogger(OpenMpi.class.getName());
    /** Why a group that closes after a failed collective aborts the job. */
    static final String CLOSED_AFTER_FAILURE = "mpi: closed after a collective failed with MPI requests outstanding; "
            + "the peers may be waiting inside MPI";

    static final MemorySegment IN_PLACE = MemorySegment.ofAddress(1);

    private static OpenMpi instance;
    private static int users;
    private static boolean finalized;

    private final String library;
    private final Arena arena = Arena.ofShared();
    private final SymbolLookup symbols;
    private final Linker linker = Linker.nativeLinker();

    final MemorySegment commWorld;
    final MemorySegment commNull;
    final MemorySegment infoNull;
    /** MPI_REQUEST_NULL: what a completed request is set to. */
    final MemorySegment requestNull;

    final MemorySegment errorsReturn;
    private final MemorySegment float32;
    private final MemorySegment float64;
    private final MemorySegment int32;
    private final MemorySegment int64;
    /** 16-bit floats travel as MPI_INT16_T and are combined by operations of Cohort's own ({@link #halfOp}). */
    private final MemorySegment int16;

    private final java.util.Map<String, MemorySegment> halfOps = new java.util.concurrent.ConcurrentHashMap<>();
    private final MemorySegment sum;
    private final MemorySegment min;
    private final MemorySegment max;
    private final MemorySegment prod;

    private final MethodHandle initialized;
    private final MethodHandle finalizedCall;
    private final MethodHandle initThread;
    private final MethodHandle finalizeCall;
    private final MethodHandle abort;
    private final MethodHandle commRank;
    private final MethodHandle commSize;
    private final MethodHandle commDup;
    private final MethodHandle commSplit;
    private final MethodHandle commSplitType;
    private final MethodHandle commFree;
    private final MethodHandle commSetErrhandler;
    private final MethodHandle errorString;
    private final MethodHandle libraryVersion;
    private final MethodHandle allreduce;
    private final MethodHandle bcast;
    private final MethodHandle allgather;
    private final MethodHandle allgatherv;
    private final MethodHandle reduceScatterBlock;
    private final MethodHandle reduce;
    private final MethodHandle gatherv;
    private final MethodHandle scatterv;
    private final MethodHandle alltoallv;
    private final MethodHandle ibarrier;
    private final MethodHandle isend;
    private final MethodHandle irecv;
    private final MethodHandle testall;
    private final MethodHandle opCreate;

    private OpenMpi(String library) {
        this.library = library;
        this.symbols = lookup(library, arena);
        commWorld = global("ompi_mpi_comm_world");
        commNull = global("ompi_mpi_comm_null");
        infoNull = global("ompi_mpi_info_null");
        requestNull = global("ompi_request_null");
        errorsReturn = global("ompi_mpi_errors_return");
        float32 = global("ompi_mpi_float");
        float64 = global("ompi_mpi_double");
        int32 = global("ompi_mpi_int32_t");
        int64 = global("ompi_mpi_int64_t");
        int16 = global("ompi_mpi_int16_t");
        sum = global("ompi_mpi_op_sum");
        min = global("ompi_mpi_op_min");
        max = global("ompi_mpi_op_max");
        prod = global("ompi_mpi_op_prod");
        initialized = function("MPI_Initialized", JAVA_INT, ADDRESS);
        finalizedCall = function("MPI_Finalized", JAVA_INT, ADDRESS);
        initThread = function("MPI_Init_thread", JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS);
        finalizeCall = function("MPI_Finalize", JAVA_INT);
        abort = function("MPI_Abort", JAVA_INT, ADDRESS, JAVA_INT);
        commRank = function("MPI_Comm_rank", JAVA_INT, ADDRESS, ADDRESS);
        commSize = function("MPI_Comm_size", JAVA_INT, ADDRESS, ADDRESS);
        commDup = function("MPI_Comm_dup", JAVA_INT, ADDRESS, ADDRESS);
        commSplit = function("MPI_Comm_split", JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS);
        commSplitType = function("MPI_Comm_split_type", JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);
        commFree = function("MPI_Comm_free", JAVA_INT, ADDRESS);
        commSetErrhandler = function("MPI_Comm_set_errhandler", JAVA_INT, ADDRESS, ADDRESS);
        errorString = function("MPI_Error_string", JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);
        libraryVersion = function("MPI_Get_library_version", JAVA_INT, ADDRESS, ADDRESS);
        allreduce = function("MPI_Allreduce", JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
        bcast = function("MPI_Bcast", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS);
        allgather =
                function("MPI_Allgather", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS);
        allgatherv = function(
                "MPI_Allgatherv", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS);
        reduceScatterBlock =
                function("MPI_Reduce_scatter_block", JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
        reduce = function("MPI_Reduce", JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS);
        gatherv = function(
                "MPI_Gatherv",
                JAVA_INT,
                ADDRESS,
                JAVA_INT,
                ADDRESS,
                ADDRESS,
                ADDRESS,
                ADDRESS,
                ADDRESS,
                JAVA_INT,
                ADDRESS);
        scatterv = function(
                "MPI_Scatterv",
                JAVA_INT,
                ADDRESS,
                ADDRESS,
                ADDRESS,
                ADDRESS,
                ADDRESS,
                JAVA_INT,
                ADDRESS,
                JAVA_INT,
                ADDRESS);
        alltoallv = function(
                "MPI_Alltoallv",
                JAVA_INT,
                ADDRESS,
                ADDRESS,
                ADDRESS,
                ADDRESS,
                ADDRESS,
                ADDRESS,
                ADDRESS,
                ADDRESS,
                ADDRESS);
        ibarrier = function("MPI_Ibarrier", JAVA_INT, ADDRESS, ADDRESS);
        isend = function("MPI_Isend", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);
        irecv = function("MPI_Irecv", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);
        testall = function("MPI_Testall", JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
        opCreate = function("MPI_Op_create", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS);
    }

    /**
     * Why Open MPI cannot be used from {@code library}, or {@code null} when it can; called by the
     * backend's availability check (loads the library, initializes nothing).
     */
    public static String missing(String library) {
        try (Arena probe = Arena.ofConfined()) {
            SymbolLookup lookup;
            try {
                lookup = lookup(library, probe);
            } catch (IllegalArgumentException e) {
                return "the mpi engine needs Open MPI's C library (" + library + "), which could not be loaded: "
                        + e.getMessage() + "; install Open MPI (Debian: apt-get install openmpi-bin libopenmpi-dev) "
                        + "or name the library with --mpi-library PATH";
            }
            if (lookup.find("ompi_mpi_comm_world").isEmpty()) {
                return library + " is not Open MPI's library (no ompi_mpi_comm_world: MPICH and its derivatives "
                        + "have another ABI, which the mpi engine does not support); install Open MPI or name its "
                        + "libmpi.so.40 with --mpi-library PATH";
            }
            return null;
        }
    }

    private static SymbolLookup lookup(String library, Arena arena) {
        return library.contains("/")
                ? SymbolLookup.libraryLookup(Path.of(library), arena)
                : SymbolLookup.libraryLookup(library, arena);
    }

    /**
     * The process's Open MPI, initialized on first use; every call is matched by {@link #release}.
     *
     * @throws IllegalStateException when MPI was finalized in this process already
     */
    static synchronized OpenMpi acquire(String library) {
        if (finalized) {
            throw new IllegalStateException(
                    "MPI was finalized in this process (a backend on the mpi engine was closed) "
                            + "and cannot be initialized again; keep one mpi backend open for the life of the process");
        }
        if (instance == null) {
            OpenMpi mpi = new OpenMpi(library);
            mpi.initialize();
            instance = mpi;
        } else if (!instance.library.equals(library)) {
            throw new IllegalStateException(
                    "this process already runs MPI from " + instance.library + ", not " + library);
        }
        users++;
        return instance;
    }

    /**
     * Ends one use; the last finalizes MPI. With an {@code abortReason} (peers may be stuck in a
     * collective) it logs the reason and aborts the job instead.
     */
    static synchronized void release(OpenMpi mpi, String abortReason) {
        if (mpi != instance || users == 0) {
            return;
        }
        if (abortReason != null) {
            // MPI_Abort ends this process too, and Open MPI's own notice of it may not make it
            // out (mpirun's help system can fail): the reason is logged first.
            LOG.log(System.Logger.Level.ERROR, abortReason + ": aborting the MPI job");
            mpi.abort(mpi.commWorld, 1);
        }
        if (--users == 0) {
            finalized = true;
            instance = null;
            mpi.check(invoke(() -> (int) mpi.finalizeCall.invokeExact()), "MPI_Finalize");
        }
    }

    private void initialize() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment flag = a.allocate(JAVA_INT);
            check(invoke(() -> (int) finalizedCall.invokeExact(flag)), "MPI_Finalized");
            if (flag.get(JAVA_INT, 0) != 0) {
                throw new IllegalStateException(
                        "MPI was finalized in this process already; it cannot be initialized again");
            }
            check(invoke(() -> (int) initialized.invokeExact(flag)), "MPI_Initialized");
            if (flag.get(JAVA_INT, 0) != 0) {
                throw new IllegalStateException("MPI was initialized in this process by someone else; the mpi engine "
                        + "initializes it itself");
            }
            MemorySegment provided = a.allocate(JAVA_INT);
            check(
                    invoke(() -> (int)
                            initThread.invokeExact(MemorySegment.NULL, MemorySegment.NULL, THREAD_MULTIPLE, provided)),
                    "MPI_Init_thread");
            if (provided.get(JAVA_INT, 0) < THREAD_SERIALIZED) {
                throw new IllegalStateException("this Open MPI provides thread level " + provided.get(JAVA_INT, 0)
                        + ", below MPI_THREAD_SERIALIZED, which the mpi engine needs (its calls run on the caller's or "
                        + "the group's thread)");
            }
        }
    }

    /** {@code MPI_Get_library_version}, e.g. "Open MPI v4.1.4, ...". */
    String version() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment text = a.allocate(8192);
            MemorySegment length = a.allocate(JAVA_INT);
            check(invoke(() -> (int) libraryVersion.invokeExact(text, length)), "MPI_Get_library_version");
            String v = text.getString(0).strip();
            int line = v.indexOf('\n');
            return line < 0 ? v : v.substring(0, line);
        }
    }

    String library() {
        return library;
    }

    // ---- communicators

    int rank(MemorySegment comm) {
        return intOut(commRank, comm, "MPI_Comm_rank");
    }

    int size(MemorySegment comm) {
        return intOut(commSize, comm, "MPI_Comm_size");
    }

    /** A duplicate of {@code comm} (collective over its ranks) that returns errors instead of aborting. */
    MemorySegment dup(MemorySegment comm) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            check(invoke(() -> (int) commDup.invokeExact(comm, out)), "MPI_Comm_dup");
            return returningErrors(out.get(ADDRESS, 0));
        }
    }

    /** The ranks of {@code comm} that share this host's memory (collective over {@code comm}'s ranks). */
    MemorySegment splitByHost(MemorySegment comm, int key) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            check(
                    invoke(() -> (int) commSplitType.invokeExact(comm, COMM_TYPE_SHARED, key, infoNull, out)),
                    "MPI_Comm_split_type");
            return returningErrors(out.get(ADDRESS, 0));
        }
    }

    /**
     * The ranks of {@code comm} that pass {@code member}, ordered by {@code key} (collective over
     * {@code comm}'s ranks), or empty on the others.
     */
    java.util.Optional<MemorySegment> split(MemorySegment comm, boolean member, int key) {
        return split(comm, member ? 0 : UNDEFINED, key);
    }

    /** {@code MPI_Comm_split}: the ranks of {@code comm} that pass {@code color}, ordered by {@code key}; empty for {@link #UNDEFINED}. */
    java.util.Optional<MemorySegment> split(MemorySegment comm, int color, int key) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            check(invoke(() -> (int) commSplit.invokeExact(comm, color, key, out)), "MPI_Comm_split");
            MemorySegment made = out.get(ADDRESS, 0);
            return made.address() == commNull.address()
                    ? java.util.Optional.empty()
                    : java.util.Optional.of(returningErrors(made));
        }
    }

    private MemorySegment returningErrors(MemorySegment comm) {
        check(invoke(() -> (int) commSetErrhandler.invokeExact(comm, errorsReturn)), "MPI_Comm_set_errhandler");
        return comm;
    }

    void free(MemorySegment comm) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment handle = a.allocate(ADDRESS);
            handle.set(ADDRESS, 0, comm);
            check(invoke(() -> (int) commFree.invokeExact(handle)), "MPI_Comm_free");
        }
    }

    /** Ends every process of {@code comm}'s job (mpirun reports it with {@code code}). */
    void abort(MemorySegment comm, int code) {
        invoke(() -> (int) abort.invokeExact(comm, code));
    }

    // ---- collectives (blocking: Open MPI's tuned algorithms, measured 2x faster than its nonblocking ones at 16 MiB)

    int allreduce(
            MemorySegment send, MemorySegment receive, int count, DataType type, ReduceOp op, MemorySegment comm) {
        MemorySegment t = type(type);
        MemorySegment o = op(op, type);
        return invoke(() -> (int) allreduce.invokeExact(send, receive, count, t, o, comm));
    }

    int bcast(MemorySegment data, int count, DataType type, int root, MemorySegment comm) {
        MemorySegment t = type(type);
        return invoke(() -> (int) bcast.invokeExact(data, count, t, root, comm));
    }

    int allgather(MemorySegment send, int count, DataType type, MemorySegment receive, MemorySegment comm) {
        MemorySegment t = type(type);
        return invoke(() -> (int) allgather.invokeExact(send, count, t, receive, count, t, comm));
    }

    int allgatherv(
            MemorySegment send,
            int count,
            DataType type,
            MemorySegment receive,
            MemorySegment counts,
            MemorySegment displacements,
            MemorySegment comm) {
        MemorySegment t = type(type);
        return invoke(() -> (int) allgatherv.invokeExact(send, count, t, receive, counts, displacements, t, comm));
    }

    int reduceScatterBlock(
            MemorySegment send, MemorySegment receive, int count, DataType type, ReduceOp op, MemorySegment comm) {
        MemorySegment t = type(type);
        MemorySegment o = op(op, type);
        return invoke(() -> (int) reduceScatterBlock.invokeExact(send, receive, count, t, o, comm));
    }

    /** {@code send} is {@link #IN_PLACE} on the root, where {@code receive} holds its operand; {@code receive} is ignored elsewhere. */
    int reduce(
            MemorySegment send,
            MemorySegment receive,
            int count,
            DataType type,
            ReduceOp op,
            int root,
            MemorySegment comm) {
        MemorySegment t = type(type);
        MemorySegment o = op(op, type);
        return invoke(() -> (int) reduce.invokeExact(send, receive, count, t, o, root, comm));
    }

    /** {@code receive}, {@code counts} and {@code displacements} are read on the root only. */
    int gatherv(
            MemorySegment send,
            int count,
            DataType type,
            MemorySegment receive,
            MemorySegment counts,
            MemorySegment displacements,
            int root,
            MemorySegment comm) {
        MemorySegment t = type(type);
        return invoke(() -> (int) gatherv.invokeExact(send, count, t, receive, counts, displacements, t, root, comm));
    }

    /** {@code send}, {@code counts} and {@code displacements} are read on the root only. */
    int scatterv(
            MemorySegment send,
            MemorySegment counts,
            MemorySegment displacements,
            DataType type,
            MemorySegment receive,
            int count,
            int root,
            MemorySegment comm) {
        MemorySegment t = type(type);
        return invoke(() -> (int) scatterv.invokeExact(send, counts, displacements, t, receive, count, t, root, comm));
    }

    int alltoallv(
            MemorySegment send,
            MemorySegment sendCounts,
            MemorySegment sendDisplacements,
            DataType type,
            MemorySegment receive,
            MemorySegment receiveCounts,
            MemorySegment receiveDisplacements,
            MemorySegment comm) {
        MemorySegment t = type(type);
        return invoke(() -> (int) alltoallv.invokeExact(
                send, sendCounts, sendDisplacements, t, receive, receiveCounts, receiveDisplacements, t, comm));
    }

    // ---- nonblocking operations (the signatures, the meeting): each writes its request into {@code request}

    int ibarrier(MemorySegment comm, MemorySegment request) {
        return invoke(() -> (int) ibarrier.invokeExact(comm, request));
    }

    /** Sends {@code count} int64 words to {@code peer}. */
    int isendWords(MemorySegment words, int count, int peer, int tag, MemorySegment comm, MemorySegment request) {
        return invoke(() -> (int) isend.invokeExact(words, count, int64, peer, tag, comm, request));
    }

    /** Receives {@code count} int64 words from {@code peer}. */
    int irecvWords(MemorySegment words, int count, int peer, int tag, MemorySegment comm, MemorySegment request) {
        return invoke(() -> (int) irecv.invokeExact(words, count, int64, peer, tag, comm, request));
    }

    /** Sends {@code count} elements of {@code type} to {@code peer}. */
    int isend(
            MemorySegment data,
            int count,
            DataType type,
            int peer,
            int tag,
            MemorySegment comm,
            MemorySegment request) {
        MemorySegment t = type(type);
        return invoke(() -> (int) isend.invokeExact(data, count, t, peer, tag, comm, request));
    }

    /** Receives {@code count} elements of {@code type} from {@code peer}. */
    int irecv(
            MemorySegment data,
            int count,
            DataType type,
            int peer,
            int tag,
            MemorySegment comm,
            MemorySegment request) {
        MemorySegment t = type(type);
        return invoke(() -> (int) irecv.invokeExact(data, count, t, peer, tag, comm, request));
    }

    /** Whether all {@code count} requests completed (each completed one is set to MPI_REQUEST_NULL); drives progress. */
    boolean testAll(int count, MemorySegment requests, MemorySegment flag) {
        check(invoke(() -> (int) testall.invokeExact(count, requests, flag, MemorySegment.NULL)), "MPI_Testall");
        return flag.get(JAVA_INT, 0) != 0;
    }

    // ---- handles and errors

    private MemorySegment type(DataType type) {
        return switch (type) {
            case FLOAT32 -> float32;
            case FLOAT64 -> float64;
            case INT32 -> int32;
            case INT64 -> int64;
            case FLOAT16, BFLOAT16 -> int16;
        };
    }

    /** MPI's operation for {@code op} on elements of {@code type}; an average is summed, then divided by the caller. */
    private MemorySegment op(ReduceOp op, DataType type) {
        return type.isHalfPrecision() ? halfOp(type, op) : op(op);
    }

    /**
     * A user-defined MPI operation (made once per type and operation, for the life of the process)
     * that combines 16-bit floats in float32 and rounds the result back: MPI's algorithms call it
     * for each pair of operands they combine, so a value is rounded once per combining step.
     */
    private MemorySegment halfOp(DataType type, ReduceOp op) {
        ReduceOp base = op == ReduceOp.AVG ? ReduceOp.SUM : op;
        return halfOps.computeIfAbsent(type + " " + base, k -> {
            try {
                java.lang.invoke.MethodHandle combine = java.lang.invoke.MethodHandles.lookup()
                        .findStatic(
                                OpenMpi.class,
                                "combineHalves",
                                java.lang.invoke.MethodType.methodType(
                                        void.class,
                                        DataType.class,
                                        ReduceOp.class,
                                        MemorySegment.class,
                                        MemorySegment.class,
                                        MemorySegment.class,
                                        MemorySegment.class));
                MemorySegment function = linker.upcallStub(
                        java.lang.invoke.MethodHandles.insertArguments(combine, 0, type, base),
                        FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS, ADDRESS),
                        Arena.global());
                MemorySegment handle = arena.allocate(ADDRESS);
                check(invoke(() -> (int) opCreate.invokeExact(function, 1, handle)), "MPI_Op_create");
                return handle.get(ADDRESS, 0);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    /** MPI_User_function for 16-bit floats: {@code inout[i] = in[i] op inout[i]} for {@code *length} elements. */
    private static void combineHalves(
            DataType type,
            ReduceOp op,
            MemorySegment in,
            MemorySegment inout,
            MemorySegment length,
            MemorySegment datatype) {
        int n = length.reinterpret(4).get(JAVA_INT, 0);
        MemorySegment a = in.reinterpret(2L * n);
        MemorySegment b = inout.reinterpret(2L * n);
        ValueLayout.OfShort bits = ValueLayout.JAVA_SHORT_UNALIGNED;
        for (int i = 0; i < n; i++) {
            float x = dev.cohort.api.collective.HalfFloats.toFloat(type, a.getAtIndex(bits, i));
            float y = dev.cohort.api.collective.HalfFloats.toFloat(type, b.getAtIndex(bits, i));
            float r = switch (op) {
                case SUM, AVG -> x + y;
                case PRODUCT -> x * y;
                case MIN -> Math.min(x, y);
                case MAX -> Math.max(x, y);
            };
            b.setAtIndex(bits, i, dev.cohort.api.collective.HalfFloats.fromFloat(type, r));
        }
    }

    /** MPI's operation for {@code op}; an average is summed, then divided by the caller. */
    private MemorySegment op(ReduceOp op) {
        return switch (op) {
            case SUM, AVG -> sum;
            case MIN -> min;
            case MAX -> max;
            case PRODUCT -> prod;
        };
    }

    /** Throws {@link MpiException} with MPI's text unless {@code code} is MPI_SUCCESS. */
    void check(int code, String call) {
        if (code != 0) {
            throw new MpiException(call + " failed: " + errorText(code) + " (MPI error " + code + ")");
        }
    }

    private String errorText(int code) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment text = a.allocate(1024);
            MemorySegment length = a.allocate(JAVA_INT);
            int rc = invoke(() -> (int) errorString.invokeExact(code, text, length));
            return rc == 0 ? text.getString(0) : "unknown error";
        }
    }

    private int intOut(MethodHandle h, MemorySegment comm, String call) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            check(invoke(() -> (int) h.invokeExact(comm, out)), call);
            return out.get(JAVA_INT, 0);
        }
    }

    private MemorySegment global(String name) {
        Optional<MemorySegment> s = symbols.find(name);
        return s.orElseThrow(() -> new IllegalStateException(library + " lacks " + name + ": not Open MPI's library?"));
    }

    private MethodHandle function(
            String name, java.lang.foreign.MemoryLayout result, java.lang.foreign.MemoryLayout... arguments) {
        return linker.downcallHandle(global(name), FunctionDescriptor.of(result, arguments));
    }

    @FunctionalInterface
    private interface Call {
        int run() throws Throwable;
    }

    private static int invoke(Call call) {
        try {
            return call.run();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** An error MPI returned. */
    static final class MpiException extends RuntimeException {
        MpiException(String message) {
            super(message);
        }
    }
}
