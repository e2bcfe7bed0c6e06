package dev.needle.cassandra.range;

import java.util.function.Consumer;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.RegularAndStaticColumns;
import org.apache.cassandra.db.partitions.PartitionIterator;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.RowIterator;
import org.apache.cassandra.schema.TableMetadata;

/**
 * A row read from the base table, with its partition's key and static row: what the index's key
 * reads ({@link KeyFetch}) and the coordinator's scan ({@link ParallelScan}) hand on, one row at
 * a time, to the statement's selection.
 */
record FetchedRow(DecoratedKey key, Row staticRow, Row row) {
    /** Every row of {@code partitions}, with its partition's key and static row, to {@code out}; closes them. */
    static void forEach(PartitionIterator partitions, Consumer<FetchedRow> out) {
        try (partitions) {
            while (partitions.hasNext()) {
                try (RowIterator partition = partitions.next()) {
                    DecoratedKey key = partition.partitionKey();
                    Row staticRow = partition.staticRow();
                    while (partition.hasNext()) {
                        out.accept(new FetchedRow(key, staticRow, partition.next()));
                    }
                }
            }
        }
    }

    /** This row as a partition of one row, as the statement's selection processes it. */
    RowIterator asPartition(TableMetadata metadata) {
        return new OneRow(metadata, this);
    }

    private static final class OneRow implements RowIterator {
        private final TableMetadata metadata;
        private final FetchedRow f;
        private boolean done;

        OneRow(TableMetadata metadata, FetchedRow f) {
            this.metadata = metadata;
            this.f = f;
        }

        @Override
        public TableMetadata metadata() {
            return metadata;
        }

        @Override
        public boolean isReverseOrder() {
            return false;
        }

        @Override
        public RegularAndStaticColumns columns() {
            return metadata.regularAndStaticColumns();
        }

        @Override
        public DecoratedKey partitionKey() {
            return f.key;
        }

        @Override
        public Row staticRow() {
            return f.staticRow;
        }

        @Override
        public boolean hasNext() {
            return !done;
        }

        @Override
        public Row next() {
            done = true;
            return f.row;
        }

        @Override
        public void close() {}
    }
}
