package dev.cohort.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.nn.Parameter;
import ai.djl.training.optimizer.Optimizer;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A DJL optimizer's state, written and read by parameter <em>name</em>. DJL's optimizers keep their
 * state (momentum, Adam's moments, update counts) in fields keyed by parameter ids, which are random
 * per process, and offer no way to save it; so this reads and writes those fields: every map from
 * parameter id to per-device arrays or to counts, and the update counters of {@link Optimizer}.
 * Settings (learning-rate trackers, betas) are the program's and are not saved. An optimizer
 * keeping state in a field of another shape is refused by name, rather than saved in part.
 */
final class OptimizerState {

    private enum Kind {
        ARRAYS,
        COUNTS,
        COUNTER
    }

    private record StateField(Field field, Kind kind) {
        String key() {
            return field.getDeclaringClass().getSimpleName() + "." + field.getName();
        }
    }

    private OptimizerState() {}

    /** Writes {@code optimizer}'s state; {@code names} maps the model's parameter ids to their names. */
    static void write(DataOutputStream out, Optimizer optimizer, Map<String, String> names) throws IOException {
        List<StateField> fields = fields(optimizer);
        out.writeUTF(optimizer.getClass().getName());
        out.writeInt(fields.size());
        for (StateField f : fields) {
            out.writeUTF(f.key());
            Object value = get(f, optimizer);
            switch (f.kind) {
                case COUNTER -> out.writeInt((Integer) value);
                case COUNTS -> {
                    Map<String, Integer> counts = cast(value);
                    List<Map.Entry<String, Integer>> known = entries(counts, names);
                    out.writeInt(known.size());
                    for (Map.Entry<String, Integer> e : known) {
                        out.writeUTF(names.get(e.getKey()));
                        out.writeInt(e.getValue());
                    }
                }
                case ARRAYS -> {
                    Map<String, Map<Device, NDArray>> arrays = cast(value);
                    List<Map.Entry<String, Map<Device, NDArray>>> known = entries(arrays, names);
                    out.writeInt(known.size());
                    for (Map.Entry<String, Map<Device, NDArray>> e : known) {
                        if (e.getValue().size() != 1) {
                            throw new IllegalStateException("the optimizer holds state for parameter '"
                                    + names.get(e.getKey()) + "' on "
                                    + e.getValue().size() + " devices; Cohort "
                                    + "checkpoints one device per rank");
                        }
                        out.writeUTF(names.get(e.getKey()));
                        ArrayCodec.write(out, e.getValue().values().iterator().next());
                    }
                }
            }
        }
    }

    /** Reads state written by {@link #write} into {@code optimizer}, under the ids of {@code parameters} (by name). */
    static void read(DataInputStream in, Optimizer optimizer, Map<String, Parameter> parameters, String source)
            throws IOException {
        read(in, optimizer, parameters, source, true);
    }

    /** As {@link #read}, adding to the state {@code optimizer} holds: another rank's share of a sharded state. */
    static void merge(DataInputStream in, Optimizer optimizer, Map<String, Parameter> parameters, String source)
            throws IOException {
        read(in, optimizer, parameters, source, false);
    }

    /** {@link #write}'s bytes: a rank's share of a sharded state, to send. */
    static byte[] bytes(Optimizer optimizer, Map<String, String> names) {
        java.io.ByteArrayOutputStream share = new java.io.ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(share)) {
            write(out, optimizer, names);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return share.toByteArray();
    }

    /** {@link #read} of another rank's {@link #bytes}, replacing the state {@code optimizer} holds. */
    static void read(byte[] state, Optimizer optimizer, Map<String, Parameter> parameters, String source) {
        try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(state))) {
            read(in, optimizer, parameters, source);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** {@link #merge} of another rank's {@link #bytes}. */
    static void merge(byte[] share, Optimizer optimizer, Map<String, Parameter> parameters, String source) {
        try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(share))) {
            merge(in, optimizer, parameters, source);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * Gives each parameter of {@code ids} that has no update count the largest count there is (the
     * parameters are updated together, so their counts are alike: a share that was lost keeps its
     * place in a learning-rate schedule).
     */
    static void alignCounts(Optimizer optimizer, java.util.Set<String> ids) {
        for (StateField f : fields(optimizer)) {
            if (f.kind() == Kind.COUNTS && get(f, optimizer) instanceof Map<?, ?> byId && !byId.isEmpty()) {
                Map<String, Integer> counts = cast(byId);
                int most = java.util.Collections.max(counts.values());
                for (String id : ids) {
                    counts.putIfAbsent(id, most);
                }
            }
        }
    }

    /** Drops {@code optimizer}'s state of every parameter but those of {@code ids} (a rank's share under ZeRO). */
    static void retain(Optimizer optimizer, java.util.Set<String> ids) {
        for (StateField f : fields(optimizer)) {
            if (f.kind() != Kind.COUNTER && get(f, optimizer) instanceof Map<?, ?> byId) {
                byId.keySet().retainAll(ids);
            }
        }
    }

    private static void read(
            DataInputStream in, Optimizer optimizer, Map<String, Parameter> parameters, String source, boolean replace)
            throws IOException {
        String saved = in.readUTF();
        if (!saved.equals(optimizer.getClass().getName())) {
            throw new IllegalArgumentException(source + " holds the state of a " + saved + ", this trainer's optimizer "
                    + "is a " + optimizer.getClass().getName());
        }
        List<StateField> fields = fields(optimizer);
        int count = in.readInt();
        if (count != fields.size()) {
            throw new IllegalArgumentException(
                    source + " holds " + count + " optimizer state fields, this optimizer has " + fields.size());
        }
        for (StateField f : fields) {
            String key = in.readUTF();
            if (!key.equals(f.key())) {
                throw new IllegalArgumentException(source + " holds optimizer state '" + key + "' where this optimizer "
                        + "has '" + f.key() + "'");
            }
            switch (f.kind) {
                case COUNTER -> {
                    // Merging shares: the most updates any rank counted (a rank owning nothing counts none).
                    int value = in.readInt();
                    set(f, optimizer, replace ? value : Math.max(value, (Integer) get(f, optimizer)));
                }
                case COUNTS -> {
                    Map<String, Integer> counts = mutable(f, optimizer, replace);
                    for (int n = in.readInt(); n > 0; n--) {
                        String name = in.readUTF();
                        counts.put(parameter(parameters, name, source).getId(), in.readInt());
                    }
                }
                case ARRAYS -> {
                    Map<String, Map<Device, NDArray>> arrays = mutable(f, optimizer, replace);
                    for (int n = in.readInt(); n > 0; n--) {
                        Parameter p = parameter(parameters, in.readUTF(), source);
                        NDArray weight = p.getArray();
                        NDArray state =
                                ArrayCodec.read(in, weight.getManager(), f.key() + " of " + p.getName(), source);
                        Map<Device, NDArray> byDevice = new ConcurrentHashMap<>();
                        byDevice.put(weight.getDevice(), state);
                        arrays.put(p.getId(), byDevice);
                    }
                }
            }
        }
    }

    private static Parameter parameter(Map<String, Parameter> parameters, String name, String source) {
        Parameter p = parameters.get(name);
        if (p == null) {
            throw new IllegalArgumentException(source + " holds optimizer state for parameter '" + name
                    + "', which this " + "model does not have");
        }
        return p;
    }

    /** The entries of the model's parameters, in name order (ids of other models' parameters are left out). */
    private static <V> List<Map.Entry<String, V>> entries(Map<String, V> byId, Map<String, String> names) {
        List<Map.Entry<String, V>> known = new ArrayList<>();
        if (byId == null) {
            return known;
        }
        for (Map.Entry<String, V> e : byId.entrySet()) {
            if (names.containsKey(e.getKey())) {
                known.add(e);
            }
        }
        known.sort(Map.Entry.comparingByKey((a, b) -> names.get(a).compareTo(names.get(b))));
        return known;
    }

    /** The ids of the parameters {@code optimizer} keeps state arrays for (momentum, moments). */
    static java.util.Set<String> parameterIds(Optimizer optimizer) {
        java.util.Set<String> ids = new java.util.TreeSet<>();
        for (StateField f : fields(optimizer)) {
            if (f.kind() == Kind.ARRAYS && get(f, optimizer) instanceof Map<?, ?> byId) {
                for (Object id : byId.keySet()) {
                    ids.add((String) id);
                }
            }
        }
        return ids;
    }

    /** The state fields of {@code optimizer}'s class and its superclasses, in a fixed order; refuses unknown state. */
    private static List<StateField> fields(Optimizer optimizer) {
        List<StateField> fields = new ArrayList<>();
        for (Class<?> c = optimizer.getClass();
                c != null && Optimizer.class.isAssignableFrom(c);
                c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                int modifiers = f.getModifiers();
                if (Modifier.isStatic(modifiers)) {
                    continue;
                }
                Kind kind = kind(f, c);
                if (kind != null) {
                    f.setAccessible(true);
                    fields.add(new StateField(f, kind));
                }
            }
        }
        fields.sort((a, b) -> a.key().compareTo(b.key()));
        return fields;
    }

    private static Kind kind(Field f, Class<?> declaring) {
        if (f.getType() == int.class) {
            // Optimizer's update counters; ints of subclasses are settings.
            return declaring == Optimizer.class && !Modifier.isFinal(f.getModifiers()) ? Kind.COUNTER : null;
        }
        if (!Map.class.isAssignableFrom(f.getType())) {
            return null;
        }
        Type type = f.getGenericType();
        if (type instanceof ParameterizedType p
                && p.getActualTypeArguments().length == 2
                && p.getActualTypeArguments()[0] == String.class) {
            Type value = p.getActualTypeArguments()[1];
            if (value == Integer.class) {
                return Kind.COUNTS;
            }
            if (value instanceof ParameterizedType v
                    && v.getRawType() == Map.class
                    && v.getActualTypeArguments()[0] == Device.class
                    && v.getActualTypeArguments()[1] == NDArray.class) {
                return Kind.ARRAYS;
            }
        }
        throw new IllegalArgumentException("optimizer " + declaring.getName() + " keeps state in field '" + f.getName()
                + "' of type " + type.getTypeName() + ", which Cohort cannot checkpoint (it saves maps from parameter "
                + "ids to arrays or counts)");
    }

    private static Object get(StateField f, Optimizer optimizer) {
        try {
            return f.field.get(optimizer);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException("cannot read optimizer state " + f.key() + ": " + e.getMessage(), e);
        }
    }

    private static void set(StateField f, Optimizer optimizer, int value) {
        try {
            f.field.setInt(optimizer, value);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException("cannot restore optimizer state " + f.key() + ": " + e.getMessage(), e);
        }
    }

    /** The map in field {@code f}, emptied where {@code empty} (a new one where the optimizer has none yet). */
    private static <V> Map<String, V> mutable(StateField f, Optimizer optimizer, boolean empty) {
        Map<String, V> map = cast(get(f, optimizer));
        if (map == null) {
            map = new ConcurrentHashMap<>();
            try {
                f.field.set(optimizer, map);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException("cannot restore optimizer state " + f.key() + ": " + e.getMessage(), e);
            }
        }
        if (empty) {
            map.clear();
        }
        return map;
    }

    @SuppressWarnings("unchecked")
    private static <T> T cast(Object value) {
        return (T) value;
    }
}
