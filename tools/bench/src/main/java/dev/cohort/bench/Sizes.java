package dev.cohort.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Byte sizes written as {@code 4K}, {@code 16M}, {@code 1G} or plain numbers. */
final class Sizes {

    static final long KIB = 1024;
    static final long MIB = 1024 * KIB;

    private Sizes() {}

    static List<Long> parse(String text) {
        List<Long> sizes = new ArrayList<>();
        for (String part : text.split(",")) {
            String p = part.trim().toUpperCase(Locale.ROOT).replace("IB", "").replace("B", "");
            if (p.isEmpty()) {
                continue;
            }
            long unit = switch (p.charAt(p.length() - 1)) {
                case 'K' -> KIB;
                case 'M' -> MIB;
                case 'G' -> 1024 * MIB;
                default -> 1;
            };
            String digits = unit == 1 ? p : p.substring(0, p.length() - 1);
            long value;
            try {
                value = Long.parseLong(digits) * unit;
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "size '" + part.trim() + "' is not a number with an optional K, M or G");
            }
            if (value <= 0 || value % 4 != 0 || value > 1024 * MIB) {
                throw new IllegalArgumentException(
                        "size '" + part.trim() + "' must be a positive multiple of 4 bytes up to 1G");
            }
            sizes.add(value);
        }
        if (sizes.isEmpty()) {
            throw new IllegalArgumentException("no sizes given");
        }
        return sizes;
    }

    static String format(long bytes) {
        if (bytes == 0) {
            return "-";
        }
        return bytes >= MIB ? bytes / MIB + " MiB" : bytes >= KIB ? bytes / KIB + " KiB" : bytes + " B";
    }
}
